"""Karpenter v1's NodeClaim and NodePool rules, as the API server enforces the CRDs.

The structural part (types, patterns, enums, limits, defaults) is written here from the CRDs
(``pkg/apis/crds/karpenter.sh_*.yaml``, generated from the kubebuilder markers of
``pkg/apis/v1``), each check naming the field it mirrors. The CEL rules
(``x-kubernetes-validations``, transition rules included) are not: they are the CRD files of
aws/karpenter-provider-aws shipped unchanged in ``crds/``, run by cel-python (``celrules``).
A broken rule is a 422 Invalid naming the field, as the API server answers for a CRD; unknown
fields follow ``fieldValidation`` like the built-in kinds (structural pruning drops them
otherwise). Defaults the CRDs declare are applied on write.
"""

from __future__ import annotations

import contextlib
import json
import re
from functools import cache
from importlib import resources as package_files
from typing import Any

import yaml

from . import celrules
from .crd_checks import StructuralChecker
from .errors import ApiError, bad_request
from .resources import NODECLAIMS, Obj, ResourceType
from .verdict import Verdict
from .yamlload import LOADER

# requirements[].key, taints[].key: a label key (qualified name with an optional prefix).
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUANTITY = re.compile(
    r"^[+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_EXPIRE_AFTER = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")  # spec.expireAfter, consolidateAfter
_GRACE = re.compile(r"^([0-9]+(s|m|h))+$")  # spec.terminationGracePeriod
_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")  # budgets[].nodes
_BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")  # budgets[].duration
_BUDGET_SCHEDULE = re.compile(
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
)
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
REASONS = ("Underutilized", "Empty", "Drifted")
POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
# aws/karpenter-provider-aws's copies of the core CRDs (they add the karpenter.k8s.aws label
# rules), as an EKS cluster runs them; their source and commit head each file.
CRD_FILES = {
    "nodeclaims": "crds/karpenter.sh_nodeclaims.yaml",
    "nodepools": "crds/karpenter.sh_nodepools.yaml",
}

_FIELDS: dict[str, frozenset[str]] = {
    "nodeclaim": frozenset({"apiVersion", "kind", "metadata", "spec", "status"}),
    "claim.spec": frozenset(
        {
            "expireAfter",
            "nodeClassRef",
            "requirements",
            "resources",
            "startupTaints",
            "taints",
            "terminationGracePeriod",
        }
    ),
    "nodeClassRef": frozenset({"group", "kind", "name"}),
    "requirement": frozenset({"key", "minValues", "operator", "values"}),
    "resources": frozenset({"requests"}),
    "taint": frozenset({"effect", "key", "timeAdded", "value"}),
    "pool.spec": frozenset({"disruption", "limits", "replicas", "template", "weight"}),
    "disruption": frozenset({"budgets", "consolidateAfter", "consolidationPolicy"}),
    "budget": frozenset({"duration", "nodes", "reasons", "schedule"}),
    "template": frozenset({"metadata", "spec"}),
    "template.metadata": frozenset({"annotations", "labels"}),
    "template.spec": frozenset(
        {
            "expireAfter",
            "nodeClassRef",
            "requirements",
            "startupTaints",
            "taints",
            "terminationGracePeriod",
        }
    ),
}


class _Checker(StructuralChecker):
    def __init__(self, resource: ResourceType, obj: Obj) -> None:
        super().__init__(resource, obj, _FIELDS)

    # --- shared parts of the two kinds ----------------------------------------------------

    def node_class_ref(self, ref: Any, path: str) -> None:
        ref = self.mapping(ref, path, "nodeClassRef", ("group", "kind", "name"))
        # nodeClassRef.group: pattern ^[^/]*$ (their CEL: not empty).
        self.string(ref["group"], f"{path}.group", re.compile(r"^[^/]*$"))
        for key in ("kind", "name"):
            self.string(ref[key], f"{path}.{key}")

    def requirements(self, value: Any, path: str) -> None:
        # requirements: maxItems 100 (the keys' and the list's CEL rules run after).
        items = self.array(value, path, max_items=100)
        for index, requirement in enumerate(items):
            where = f"{path}[{index}]"
            requirement = self.mapping(requirement, where, "requirement", ("key", "operator"))
            key = self.string(requirement["key"], f"{where}.key", _LABEL_KEY)
            if len(key) > 316:
                raise self.fail(f"{where}.key", "Too long: may not be longer than 316")
            self.enum(requirement["operator"], f"{where}.operator", OPERATORS)
            for value_index, item in enumerate(
                self.array(requirement.get("values"), f"{where}.values")
            ):
                self.string(item, f"{where}.values[{value_index}]")
            if "minValues" in requirement:
                self.integer(requirement["minValues"], f"{where}.minValues", 1, 50)

    def taints(self, value: Any, path: str) -> None:
        for index, taint in enumerate(self.array(value, path)):
            where = f"{path}[{index}]"
            taint = self.mapping(taint, where, "taint", ("effect", "key"))
            if self.string(taint["key"], f"{where}.key", _LABEL_KEY) == "":
                raise self.fail(
                    f"{where}.key", 'Invalid value: "": should be at least 1 chars long'
                )
            self.enum(taint["effect"], f"{where}.effect", TAINT_EFFECTS)
            if "value" in taint:
                self.string(taint["value"], f"{where}.value", _LABEL_KEY)

    def durations(self, spec: Obj, path: str) -> None:
        if "expireAfter" in spec:
            self.string(spec["expireAfter"], f"{path}.expireAfter", _EXPIRE_AFTER)
        if "terminationGracePeriod" in spec:
            self.string(spec["terminationGracePeriod"], f"{path}.terminationGracePeriod", _GRACE)

    def quantities(self, value: Any, path: str) -> None:
        for key, quantity in (value or {}).items():
            if (
                isinstance(quantity, bool)
                or not isinstance(quantity, (int, str))
                or (isinstance(quantity, str) and not _QUANTITY.match(quantity))
            ):
                raise self.fail(
                    f"{path}.{key}", f"Invalid value: {json.dumps(quantity)}: must be a quantity"
                )


def _nodeclaim(checker: _Checker, obj: Obj) -> None:
    spec = checker.mapping(obj.get("spec"), "spec", "claim.spec", ("nodeClassRef", "requirements"))
    spec.setdefault("expireAfter", "720h")  # spec.expireAfter default
    checker.node_class_ref(spec["nodeClassRef"], "spec.nodeClassRef")
    checker.requirements(spec["requirements"], "spec.requirements")
    checker.taints(spec.get("taints"), "spec.taints")
    checker.taints(spec.get("startupTaints"), "spec.startupTaints")
    checker.durations(spec, "spec")
    resources = checker.mapping(spec.get("resources"), "spec.resources", "resources")
    checker.quantities(resources.get("requests"), "spec.resources.requests")


def _nodepool(checker: _Checker, obj: Obj) -> None:
    spec = checker.mapping(obj.get("spec"), "spec", "pool.spec", ("template",))
    _pool_template(checker, spec)
    _pool_disruption(checker, spec)
    checker.quantities(spec.get("limits"), "spec.limits")
    _pool_weight_and_replicas(checker, spec)


def _pool_template(checker: _Checker, spec: Obj) -> None:
    """Check ``spec.template`` (its labels, then its spec), defaulting ``expireAfter``."""
    template = checker.mapping(spec["template"], "spec.template", "template", ("spec",))
    metadata = checker.mapping(
        template.get("metadata"), "spec.template.metadata", "template.metadata"
    )
    _template_labels(checker, metadata.get("labels") or {})
    tspec = checker.mapping(
        template["spec"], "spec.template.spec", "template.spec", ("nodeClassRef", "requirements")
    )
    tspec.setdefault("expireAfter", "720h")
    checker.node_class_ref(tspec["nodeClassRef"], "spec.template.spec.nodeClassRef")
    checker.requirements(tspec["requirements"], "spec.template.spec.requirements")
    checker.taints(tspec.get("taints"), "spec.template.spec.taints")
    checker.taints(tspec.get("startupTaints"), "spec.template.spec.startupTaints")
    checker.durations(tspec, "spec.template.spec")


def _template_labels(checker: _Checker, labels: Obj) -> None:
    """Check ``spec.template.metadata.labels``: at most 100, valid values (the CEL rules
    refuse the keys Karpenter keeps for itself)."""
    if len(labels) > 100:  # template.metadata.labels: maxProperties 100
        raise checker.fail("spec.template.metadata.labels", "Too many: must have at most 100 items")
    for key, value in labels.items():
        where = f"spec.template.metadata.labels.{key}"
        checker.string(value, where, _LABEL_VALUE)
        if len(value) > 63:
            raise checker.fail(where, "Too long: may not be longer than 63")


def _pool_disruption(checker: _Checker, spec: Obj) -> None:
    """Check ``spec.disruption``, filling in the CRD's defaults (consolidation after 0s when
    empty or underutilized, one budget of 10% of nodes)."""
    disruption = checker.mapping(spec.setdefault("disruption", {}), "spec.disruption", "disruption")
    disruption.setdefault("consolidateAfter", "0s")
    disruption.setdefault("consolidationPolicy", "WhenEmptyOrUnderutilized")
    checker.string(
        disruption["consolidateAfter"], "spec.disruption.consolidateAfter", _EXPIRE_AFTER
    )
    checker.enum(disruption["consolidationPolicy"], "spec.disruption.consolidationPolicy", POLICIES)
    budgets = checker.array(
        disruption.setdefault("budgets", [{"nodes": "10%"}]), "spec.disruption.budgets", 50
    )
    for index, budget in enumerate(budgets):
        _budget(checker, budget, f"spec.disruption.budgets[{index}]")


def _budget(checker: _Checker, value: Any, where: str) -> None:
    """Check one disruption budget (``where`` is its path), defaulting ``nodes`` to 10%."""
    budget = checker.mapping(value, where, "budget")
    budget.setdefault("nodes", "10%")
    checker.string(budget["nodes"], f"{where}.nodes", _BUDGET_NODES)
    if "schedule" in budget:
        checker.string(budget["schedule"], f"{where}.schedule", _BUDGET_SCHEDULE)
    if "duration" in budget:
        checker.string(budget["duration"], f"{where}.duration", _BUDGET_DURATION)
    for reason_index, reason in enumerate(
        checker.array(budget.get("reasons"), f"{where}.reasons", 50)
    ):
        checker.enum(reason, f"{where}.reasons[{reason_index}]", REASONS)


def _pool_weight_and_replicas(checker: _Checker, spec: Obj) -> None:
    """Check ``spec.weight`` and ``spec.replicas`` (the CEL rules say what a static NodePool,
    one with replicas, may not have)."""
    if "weight" in spec:
        checker.integer(spec["weight"], "spec.weight", 1, 100)
    if "replicas" in spec:
        checker.integer(spec["replicas"], "spec.replicas", 0, None)


@cache
def crd(resource: ResourceType) -> Obj:
    """The CRD of NodeClaims or NodePools, as shipped in ``crds/``."""
    text = (package_files.files("kubemu") / CRD_FILES[resource.plural]).read_text()
    # libyaml's safe loader: the CRD files are large and read by every process that starts.
    loaded: Obj = yaml.load(text, Loader=LOADER)
    return loaded


@cache
def rules(resource: ResourceType) -> celrules.Node | None:
    """The v1 schema's CEL rules, compiled once per process."""
    version = next(v for v in crd(resource)["spec"]["versions"] if v["name"] == "v1")
    return celrules.compile_schema(CRD_FILES[resource.plural], version["schema"]["openAPIV3Schema"])


def _cel(checker: _Checker, obj: Obj, old: Obj | None) -> None:
    """The CEL rules over ``spec`` (status is not checked); with ``old``, the transition
    rules."""
    node, spec = rules(checker.resource), {"spec": obj.get("spec")}
    violation = (
        celrules.first_violation(node, spec)
        if old is None
        else celrules.first_transition_violation(node, spec, {"spec": old.get("spec")})
    )
    if violation is not None:
        raise checker.fail(violation.path, violation.detail)


def check(resource: ResourceType, obj: Obj, mode: str) -> Verdict:
    """Validates and defaults ``obj`` in place; returns the validation Verdict."""
    checker = _structural(resource, obj, mode)
    _cel(checker, obj, None)
    warnings = (
        [f'unknown field "{path}"' for _, _, path in checker.unknown] if mode == "Warn" else []
    )
    return Verdict(obj, warnings)


def _structural(resource: ResourceType, obj: Obj, mode: str) -> _Checker:
    """The schema's checks and defaults, unknown fields pruned (refused when Strict)."""
    checker = _Checker(resource, obj)
    if "spec" not in obj:
        raise checker.fail("spec", "Required value")
    for key in obj:
        if key not in _FIELDS["nodeclaim"]:
            checker.unknown.append((obj, key, key))
    (_nodeclaim if resource is NODECLAIMS else _nodepool)(checker, obj)
    if checker.unknown and mode == "Strict":
        listed = ", ".join(f'unknown field "{path}"' for _, _, path in checker.unknown)
        raise bad_request(f"strict decoding error: {listed}")
    for holder, key, _ in checker.unknown:
        holder.pop(key, None)
    return checker


def _defaulted(resource: ResourceType, obj: Obj) -> Obj:
    """``obj`` with the CRD's defaults, as the server reads it back from storage."""
    copied: Obj = json.loads(json.dumps(obj))
    # Stored before these rules were checked (a cluster file): compared as it is.
    with contextlib.suppress(ApiError):
        _structural(resource, copied, "Ignore")
    return copied


def check_update(resource: ResourceType, old: Obj, new: Obj) -> None:
    """The transition rules (CEL with ``oldSelf``: NodeClaim's immutable spec, NodePool's
    nodeClassRef group and kind, no switch between static and dynamic); ``new`` has passed
    ``check``'s rules."""
    _cel(_Checker(resource, new), new, _defaulted(resource, old))


def openapi_schema(resource: ResourceType) -> Obj:
    """A structural schema of the kind for the OpenAPI document (the rules live above)."""
    spec_fields = _FIELDS["claim.spec" if resource is NODECLAIMS else "pool.spec"]
    return {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    name: {"x-kubernetes-preserve-unknown-fields": True}
                    for name in sorted(spec_fields)
                },
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "x-kubernetes-group-version-kind": [
            {"group": "karpenter.sh", "version": "v1", "kind": resource.kind}
        ],
    }
