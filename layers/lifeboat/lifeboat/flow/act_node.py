"""Act's marks on the node itself: the taint and cordon (read first, or unread for an
involuntary notice), the waiting mark cleared, the node restored, the EC2 maintenance
label; every patch built from the node as read and rebuilt when it changed under it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from lifeboat.errors import BrokenInvariant
from lifeboat.flow.act_result import EXCLUSION_ACTION, PATCH_ATTEMPTS, Action, ActResult
from lifeboat.kube import nodes
from lifeboat.kube.client import KubeApi, KubeError
from lifeboat.marks import node_marks
from lifeboat.marks.maintenance_holds import hold_for
from lifeboat.marks.node_patches import (
    ec2_maintenance_operations,
    releases_exclusion,
    restore_operations,
    taint_operations,
    unread_taint_variants,
    untaint_operations,
)
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.objects import Obj
from lifeboat.model.settings import Settings
from lifeboat.model.target import Target


class NodeMarker:
    def __init__(self, kube: KubeApi, settings: Settings, clock: Callable[[], datetime]) -> None:
        self._kube = kube
        self._settings = settings
        self._clock = clock

    def taint(
        self, notice: Notice, target: Target, mode: str, dry: bool, outcome: ActResult
    ) -> list[Action]:
        """Taint and cordon (``mode`` "cordon", a node about to go: also excluded from load
        balancers) or only mark (``mode`` "prefer", a deferred notice), in one patch."""
        if target.node is None:
            raise BrokenInvariant("lifeboat.flow.act_node.taint: target.node is None")
        key = node_marks.taint_key(notice.kind)
        effect = self._settings.taint_effect if mode == "cordon" else "PreferNoSchedule"
        cordon = mode == "cordon"
        exclude = cordon and self._settings.exclude_from_load_balancers
        actions: list[Action] = [{"type": "taint", "key": key, "effect": effect}]
        if cordon:
            actions.append({"type": "cordon"})
        marker = None
        if notice.ec2_event and notice.kind is Kind.SCHEDULED_CHANGE and notice.deadline:
            marker = node_marks.ec2_maintenance_value(notice.deadline)
        # The maintenance the node is held for, so that only its own end releases it.
        hold = hold_for(notice) if notice.kind is Kind.SCHEDULED_CHANGE else None
        node = self.patch(
            target.node,
            lambda n: taint_operations(n, key, effect, cordon, exclude, marker, hold),
            dry,
        )
        if node is None:
            # The node went away while we were patching: nothing to cordon, nothing to drain.
            outcome.node_gone = True
            return [{**actions[0], "error": f"node {nodes.name_of(target.node)} is gone"}]
        # Reported when Lifeboat labels the node (now, or at an earlier delivery), not for
        # a label the operator set: Lifeboat neither added that one nor will remove it.
        if exclude and (
            node_marks.excluded_by_lifeboat(node) or not nodes.excluded_from_load_balancers(node)
        ):
            actions.append(dict(EXCLUSION_ACTION))
        return actions

    def mark_ec2_maintenance(self, notice: Notice, target: Target) -> bool:
        """Label the node of a maintenance AWS Health told first with the start of the EC2
        event the sweep now sees (``node_patches.ec2_maintenance_operations``); whether a
        patch was sent."""
        if target.node is None or notice.deadline is None or self._settings.dry_run:
            return False
        start, code = notice.deadline, notice.detail or None
        if not ec2_maintenance_operations(target.node, start, code):
            return False
        self.patch(target.node, lambda n: ec2_maintenance_operations(n, start, code), False)
        return True

    def taint_unread(self, node_name: str, provider_id: str, notice: Notice) -> Obj | None:
        """Taint and cordon the node of an involuntary notice without reading it first (a
        guarded JSON patch, see ``unread_taint_variants``); the node as patched, or None
        when neither patch fits it (not this instance's node, our taint already there, no
        such node): the caller then reads it and decides as usual."""
        key = node_marks.taint_key(notice.kind)
        variants = unread_taint_variants(
            provider_id,
            key,
            self._settings.taint_effect,
            self._settings.exclude_from_load_balancers,
        )
        for operations in variants:
            try:
                return self._kube.patch_node(node_name, operations)
            except KubeError as error:
                if error.status not in (404, 422):
                    raise
                if error.status == 404:
                    return None
        return None

    def clear_pending(self, notice: Notice, target: Target, dry: bool) -> list[Action]:
        """Remove the waiting mark of a notice let go, and the load balancer exclusion if
        Lifeboat added it and no other of its taints keeps the node out of service."""
        if target.node is None:
            raise BrokenInvariant("lifeboat.flow.act_node.clear_pending: target.node is None")
        key = node_marks.taint_key(notice.kind)
        node = self.patch(target.node, lambda n: untaint_operations(n, key), dry)
        if node is None:
            return []
        actions: list[Action] = [{"type": "untaint", "key": key}]
        if releases_exclusion(node, key):
            actions.append({"type": "unlabel", "key": nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL})
        return actions

    def restore(self, notice: Notice, target: Target, dry: bool) -> list[Action]:
        """Undo Lifeboat's taint, cordon and load balancer exclusion on a node that stays
        (``node_patches.restore_operations``); the actions as the node was before."""
        if target.node is None:
            raise BrokenInvariant("lifeboat.flow.act_node.restore: target.node is None")
        key = node_marks.taint_key(notice.kind)
        ended = None
        if notice.ends_maintenance and notice.deadline is not None:
            ended = node_marks.maintenance_stamp(notice.deadline)
        end = (notice, self._clock()) if notice.ends_maintenance else None
        before = target.node
        node = self.patch(before, lambda n: restore_operations(n, key, ended, end), dry)
        if node is None:
            return []
        operations = restore_operations(node, key, ended, end)
        paths = {op["path"] for op in operations if op["op"] == "remove"}
        untainted = any(op["path"] == "/spec/taints" for op in operations)
        actions: list[Action] = [{"type": "untaint", "key": key}] if untainted else []
        if "/spec/unschedulable" in paths:
            actions.append({"type": "uncordon"})
        if any(p.startswith("/metadata/labels/") for p in paths):
            actions.append({"type": "unlabel", "key": nodes.EXCLUDE_FROM_LOAD_BALANCERS_LABEL})
        return actions

    def patch(
        self, node: Obj, operations_for: Callable[[Obj], list[dict[str, Any]]], dry: bool
    ) -> Obj | None:
        """Apply the JSON patch built from the node as read; on 409/422 (it changed since),
        read it again and rebuild. The node the applied patch was built from (None if the
        node is gone); in a dry run, ``node`` itself, unpatched."""
        if dry:
            return node
        for attempt in range(PATCH_ATTEMPTS):
            operations = operations_for(node)
            if not operations:
                return node
            try:
                self._kube.patch_node(nodes.name_of(node), operations)
                return node
            except KubeError as error:
                if error.status == 404:
                    return None  # deleted since it was read: gone, nothing to patch
                if error.status not in (409, 422) or attempt == PATCH_ATTEMPTS - 1:
                    raise
            fresh = self._kube.get_node(nodes.name_of(node))
            if fresh is None:
                return None
            node = fresh
        return node
