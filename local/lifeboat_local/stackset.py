"""The template a service-managed StackSet deploys: template.yaml with its transforms done.

StackSets with service-managed permissions (auto-deployment to an OU) refuse templates that
reference macros, the AWS::Serverless and AWS::LanguageExtensions transforms included. So
the packaged template (``sam package``: code and layer in S3) is processed here, offline,
into plain CloudFormation:

1. ``Fn::ForEach::ManagedClusters`` is dropped: a StackSet names no cluster (ClusterNames
   stays empty in every account); it serves the clusters tagged ``ClusterTagKey``. Any other
   use of a language extension is refused, naming it.
2. The SAM transform runs (aws-sam-translator, as CloudFormation would run it).
3. With ``--artifact-bucket-prefix P``, the code and layer are read from the bucket
   ``P-<region>`` of the region each stack is in (Lambda reads code only from a bucket in
   its own region): copy the packaged artifacts to each region's bucket under the same keys.

Run with the dev extras (aws-sam-translator)::

    python -m lifeboat_local.stackset .aws-sam/packaged.yaml \\
        --artifact-bucket-prefix lifeboat-artifacts-123456789012 --out .aws-sam/stackset.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Extensions of AWS::LanguageExtensions other than the loop this module drops.
LANGUAGE_EXTENSIONS = ("Fn::ForEach", "Fn::Length", "Fn::ToJsonString")
# What a StackSet may leave empty: the loop over it is dropped.
DROPPED_LOOP = "Fn::ForEach::ManagedClusters"
# CreateStackSet's TemplateBody limit; larger templates go through S3 (--template-url).
TEMPLATE_BODY_LIMIT = 51_200


class StackSetTemplateError(ValueError):
    """The template cannot be made into what a service-managed StackSet deploys."""


def _drop_cluster_loop(template: dict[str, Any]) -> None:
    resources = template.get("Resources", {})
    loop = resources.pop(DROPPED_LOOP, None)
    if loop is not None and loop[1] != {"Ref": "ClusterNames"}:
        raise StackSetTemplateError(f"{DROPPED_LOOP} loops over {loop[1]}, not ClusterNames")
    text = json.dumps(template)
    for extension in LANGUAGE_EXTENSIONS:
        if f'"{extension}' in text:
            raise StackSetTemplateError(
                f"the template uses {extension} beyond {DROPPED_LOOP}: a service-managed "
                "StackSet cannot expand it; expand it here first"
            )


def _prune_unused(template: dict[str, Any]) -> list[str]:
    """Conditions and parameters only the dropped loop used (CloudFormation accepts them,
    but they would ask a StackSet operator for settings that do nothing). Returns them."""
    pruned: list[str] = []
    changed = True
    while changed:
        changed = False
        for section in ("Conditions", "Parameters"):
            for name in list(template.get(section, {})):
                rest = {k: v for k, v in template.items() if k != section}
                rest[section] = {k: v for k, v in template[section].items() if k != name}
                text = json.dumps(rest)
                if section == "Conditions":
                    used = any(
                        use in text
                        for use in (
                            f'"Condition": "{name}"',
                            f'"Fn::If": ["{name}"',
                        )
                    )
                else:
                    used = f'"Ref": "{name}"' in text or "${" + name + "}" in text
                if not used:
                    del template[section][name]
                    pruned.append(f"{section}.{name}")
                    changed = True
    interface = template.get("Metadata", {}).get("AWS::CloudFormation::Interface", {})
    kept = template.get("Parameters", {})
    for group in interface.get("ParameterGroups", []):
        group["Parameters"] = [name for name in group.get("Parameters", []) if name in kept]
    return pruned


def _check_packaged(template: dict[str, Any]) -> None:
    """The code and layer must be in S3 already (``sam package``)."""
    for logical_id, resource in template.get("Resources", {}).items():
        properties = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            location = properties.get(key)
            if isinstance(location, str) and not location.startswith("s3://"):
                raise StackSetTemplateError(
                    f"Resources.{logical_id}.Properties.{key} is {location!r}, not in S3: "
                    "run sam build and sam package first, and process the packaged template"
                )


def _regional_buckets(template: dict[str, Any], prefix: str) -> int:
    """Point the code and layer at ``<prefix>-<region>``; returns how many were changed."""
    changed = 0
    bucket = {"Fn::Sub": f"{prefix}-${{AWS::Region}}"}
    for resource in template.get("Resources", {}).values():
        properties = resource.get("Properties", {})
        if resource.get("Type") == "AWS::Lambda::Function":
            location = properties.get("Code", {})
        elif resource.get("Type") == "AWS::Lambda::LayerVersion":
            location = properties.get("Content", {})
        else:
            continue
        if "S3Bucket" in location:
            location["S3Bucket"] = bucket
            changed += 1
    return changed


class _NoManagedPolicies:
    """The template attaches no AWS managed policy (tests/unit/template/test_template.py)."""

    def load(self) -> dict[str, str]:
        return {}


def processed_template(
    packaged: dict[str, Any],
    artifact_bucket_prefix: str | None = None,
    parameters: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``packaged`` (template.yaml after ``sam package``) as plain CloudFormation.

    The SAM transform writes some parameters' values into the template (DeploymentType:
    CodeDeploy's configuration); ``parameters`` gives them (default: the template's
    defaults). A StackSet cannot change them afterwards, so they leave the parameters."""
    from samtranslator.translator.transform import (  # type: ignore[import-untyped]
        transform,
    )

    template = json.loads(json.dumps(packaged, default=str))
    transforms = template.get("Transform", [])
    transforms = [transforms] if isinstance(transforms, str) else list(transforms)
    if "AWS::Serverless-2016-10-31" not in transforms:
        raise StackSetTemplateError("not a SAM template (no AWS::Serverless-2016-10-31)")
    _drop_cluster_loop(template)
    _prune_unused(template)
    _check_packaged(template)
    template["Transform"] = "AWS::Serverless-2016-10-31"
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")  # the translator wants one
    result: dict[str, Any] = transform(template, dict(parameters or {}), _NoManagedPolicies())
    result.pop("Transform", None)
    _prune_unused(result)
    if artifact_bucket_prefix and not _regional_buckets(result, artifact_bucket_prefix):
        raise StackSetTemplateError("no Lambda code or layer in S3 to point at regions")
    text = json.dumps(result)
    if "AWS::Serverless::" in text:
        raise StackSetTemplateError("a SAM resource was left untransformed")
    return result


# What comes before this step, said when its input is missing.
PACKAGE_FIRST = (
    "no packaged template: package first (make sam-build, then .sam-venv/bin/sam package "
    "--s3-bucket BUCKET --output-template-file {path}; docs/organisation.md, StackSets)"
)


def _load(packaged: Path) -> dict[str, Any] | None:
    """The packaged template, or None once the error is said (a missing file names the steps
    that write it)."""
    from cfnlint.decode import decode_str  # type: ignore[import-untyped]

    if not packaged.exists():
        print(f"stackset: error: {PACKAGE_FIRST.format(path=packaged)}", file=sys.stderr)
        return None
    try:
        loaded, errors = decode_str(packaged.read_text(encoding="utf-8"))
    except OSError as error:
        print(f"stackset: error: {packaged}: {error.strerror}", file=sys.stderr)
        return None
    if errors or loaded is None:
        print(f"stackset: error: {packaged}: {errors[0]}", file=sys.stderr)
        return None
    return dict(loaded)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lifeboat_local.stackset",
        description="The packaged SAM template as plain CloudFormation, for a "
        "service-managed StackSet (no macros).",
    )
    parser.add_argument("packaged", type=Path, help="the template sam package wrote")
    parser.add_argument("--out", type=Path, required=True, help="the JSON template to write")
    parser.add_argument(
        "--parameter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a value the SAM transform writes into the template (e.g. DeploymentType)",
    )
    parser.add_argument(
        "--artifact-bucket-prefix",
        default=None,
        help="read code and layer from <prefix>-<region> in each region",
    )
    args = parser.parse_args(argv)
    loaded = _load(args.packaged)
    if loaded is None:
        return 1
    values = dict(item.partition("=")[::2] for item in args.parameter)
    try:
        processed = processed_template(loaded, args.artifact_bucket_prefix, values)
    except StackSetTemplateError as error:
        print(f"stackset: error: {args.packaged}: {error}", file=sys.stderr)
        return 1
    text = json.dumps(processed, separators=(",", ":"), sort_keys=True)
    args.out.write_text(text + "\n", encoding="utf-8")
    how = "--template-body" if len(text) <= TEMPLATE_BODY_LIMIT else "--template-url (upload it)"
    print(f"{args.out}: {len(text):,} bytes, {len(processed['Resources'])} resources; use {how}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
