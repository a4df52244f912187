"""Checks on the Karpenter controller running beside Lifeboat.

From v1.12 Karpenter's AWS provider polls ``ec2:DescribeInstanceStatus`` every minute, with or
without an interruption queue (``pkg/controllers/interruption/instancestatus_controller.go``),
and deletes the NodeClaim of every instance with an EC2 scheduled event at once: Lifeboat's
budget-aware scheduled maintenance then never happens for Karpenter nodes. Its only off
switch is to deny its role that action (docs/karpenter.md). The version is read
from the controller Deployment's image tag (``public.ecr.aws/karpenter/controller:1.12.0@
sha256:...``, as its Helm chart sets it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from lifeboat.model.objects import Obj
from lifeboat_local.audit.findings import Issue
from lifeboat_local.audit.karpenter_access import Access, command_that_tells
from lifeboat_local.audit.view import ClusterView, ref

# The first Karpenter release with the instance status poller (aws/karpenter-provider-aws #9064).
POLLER_SINCE: Final = (1, 12)
_CONTROLLER_IMAGE: Final = re.compile(r"(?:^|/)karpenter/controller$")
_VERSION: Final = re.compile(r"\Av?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?\Z")


def image_version(image: str) -> tuple[int, int] | None:
    """(major, minor) of a Karpenter controller image's tag, None if not one or untagged."""
    name = image.split("@", 1)[0]
    repository, _, tag = name.rpartition(":")
    if not repository or "/" in tag or not _CONTROLLER_IMAGE.search(repository):
        return None
    found = _VERSION.match(tag)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _containers(deployment: Obj) -> list[Obj]:
    spec = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    return list(spec.get("containers") or [])


def instance_status_poller(view: ClusterView) -> Iterator[Issue]:
    """A Karpenter controller of v1.12 or later, whose poller drains scheduled maintenance
    at once unless its role is denied ``ec2:DescribeInstanceStatus`` (asked of IAM when the
    role is given: ``lifeboat_local.audit.karpenter_access``; nothing to say once denied)."""
    access = view.karpenter_access
    if access is not None and access.denied:
        return
    for workload in view.inventory.workloads:
        if workload.get("kind") != "Deployment":
            continue
        for container in _containers(workload):
            image = str(container.get("image") or "")
            version = image_version(image)
            if version is None or version < POLLER_SINCE:
                continue
            yield Issue(
                ref(workload),
                f"Karpenter {version[0]}.{version[1]} ({image.split('@', 1)[0]}) polls "
                "ec2:DescribeInstanceStatus every minute and deletes the NodeClaim of every "
                "instance with an EC2 scheduled event at once, ignoring budgets and windows"
                + _what_iam_says(access),
                "deny ec2:DescribeInstanceStatus to Karpenter's controller role (it stops "
                "polling at its next call, no restart needed; lifting the deny later needs a "
                'restart of its pods) (docs/karpenter.md, "Running with Karpenter"); '
                "Lifeboat's instance status sweep then handles scheduled events and impaired "
                "instances" + _how_to_tell(access),
            )
            break


def _what_iam_says(access: Access | None) -> str:
    if access is None:
        return "; whether its role is denied the action is not known here"
    if access.allowed:
        return f"; IAM's policy simulator says role {access.role_arn} is allowed it"
    why = access.error or f"the simulator answered {access.decision}"
    return f"; IAM could not say whether role {access.role_arn} is denied it ({why})"


def _how_to_tell(access: Access | None) -> str:
    if access is not None and access.allowed:
        return ""
    return (
        "; to tell whether the deny is in place, give --karpenter-role-arn, or run: "
        + command_that_tells(access.role_arn if access is not None else None)
    )
