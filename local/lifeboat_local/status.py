"""``lifeboat status``: the rotations of a cluster and how far each has got.

Reads the rotations' ConfigMaps (``lifeboat-rotation-<name>`` in Lifeboat's namespace) from a
live cluster (``--kubeconfig``, with the operator's credentials: one list request) or from a
cluster file, such as the one ``lifeboat replay --state-out`` writes.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from lifeboat.kube.client import KubeError
from lifeboat.model.instants import format_instant
from lifeboat.model.settings import Settings
from lifeboat.rotation import store
from lifeboat.rotation.model import NodePhase, Rotation, StateError, to_json
from lifeboat_local.common import (
    EXIT_NOT_DONE,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    add_cluster_flags,
    add_command,
)
from lifeboat_local.source import open_cluster

# Active rotations first, then the finished ones, newest first within each.
_ORDER = {
    "running": 0,
    "paused": 1,
    "failed": 2,
    "cancelled": 3,
    "completed-with-skips": 4,
    "completed": 5,
}
# EXIT_NOT_DONE: a rotation shown has a node not done (in flight, failed, skipped, released):
# what a script waits for before scaling a node group down. 0 only when every node shown is done.


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "status",
        summary="the rotations of a cluster and their progress",
        description="The rotations of a cluster (running ones first) and, per node, how far "
        "it has got: waiting, replacing, draining, rescheduling (its health gate), done. "
        f"Exit status {EXIT_NOT_DONE} unless every node of every rotation shown is done "
        "(wait for 0 before scaling a node group down).",
        examples="""
            lifeboat status --kubeconfig ~/.kube/config
            lifeboat status legacy-to-karpenter --kubeconfig ~/.kube/config --json
            lifeboat status --cluster state.yaml
        """,
    )
    parser.add_argument("rotation", nargs="?", metavar="ROTATION", help="only this rotation")
    add_cluster_flags(
        parser,
        cluster_help="a cluster file, e.g. what lifeboat replay --state-out wrote",
        kubeconfig_help="a live cluster (read only: one list of ConfigMaps)",
    )
    parser.add_argument(
        "--namespace",
        default=Settings().lease_namespace,
        help="Lifeboat's namespace (LIFEBOAT_LEASE_NAMESPACE; default: %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON document")


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    # Rotations are ConfigMaps: no kind partial.missing_kinds knows changes this answer.
    with open_cluster(args.cluster, args.kubeconfig, args.context, depends_on=()) as source:
        selector = f"{store.NAME_LABEL}={args.rotation}" if args.rotation else store.NAME_LABEL
        try:
            found = source.kube.list_configmaps(args.namespace, selector)
            if args.rotation and not found:  # a typo? name the rotations there are
                everything = source.kube.list_configmaps(args.namespace, store.NAME_LABEL)
                there = sorted(
                    {
                        str((c.get("metadata") or {}).get("labels", {}).get(store.NAME_LABEL))
                        for c in everything
                    }
                )
                where = f"namespace {args.namespace} of {source.description}"
                held = f"the rotations there: {', '.join(there)}" if there else "it holds none"
                raise UsageError(f"no rotation {args.rotation} in {where}; {held}")
        except KubeError as error:
            raise UsageError(f"{source.description}: {error}") from None
    rotations, unreadable = [], []
    for configmap in found:
        try:
            rotations.append(store.read(configmap).rotation)
        except StateError as error:
            unreadable.append(str(error))
    rotations.sort(key=lambda r: (_ORDER.get(str(r.phase), 9), -r.requested_at.timestamp()))
    if args.json:
        document = {
            "rotations": [json.loads(to_json(rotation)) for rotation in rotations],
            "unreadable": unreadable,
        }
        out.write(json.dumps(document, indent=2) + "\n")
    else:
        write_human(rotations, unreadable, args.namespace, source.description, out)
    if args.rotation and not rotations:
        print(f"lifeboat: error: no rotation {args.rotation} in {args.namespace}", file=sys.stderr)
        return EXIT_USAGE
    if unreadable or any(not all_done(rotation) for rotation in rotations):
        return EXIT_NOT_DONE
    return EXIT_OK


def all_done(rotation: Rotation) -> bool:
    """Every node of ``rotation`` rotated (health gate passed): the group may be scaled
    down. A skipped, failed or released node still runs its pods."""
    return all(node.phase is NodePhase.DONE for node in rotation.nodes)


def write_human(
    rotations: list[Rotation], unreadable: list[str], namespace: str, where: str, out: TextIO
) -> None:
    if not rotations and not unreadable:
        out.write(f"no rotation in namespace {namespace} of {where}\n")
    for index, rotation in enumerate(rotations):
        if index:
            out.write("\n")
        out.write(describe(rotation))
    for problem in unreadable:
        out.write(f"unreadable: {problem}\n")


def describe(rotation: Rotation) -> str:
    spec = rotation.spec
    lines = [
        f"rotation {spec.name}: {rotation.phase}"
        + (f" ({rotation.reason})" if rotation.reason else ""),
        f"  requested {format_instant(rotation.requested_at)} (event {rotation.request_id}; "
        f"uid {rotation.uid}, what its commands name: lifeboat rotate --uid)"
        + (f" for cluster {spec.cluster}" if spec.cluster else ""),
        f"  nodes: {spec.describe_selector()}; at most {spec.max_in_flight} in flight; "
        f"health gate {int(spec.health_timeout.total_seconds())}s",
        f"  progress: {rotation.summary().split(': ', 1)[1]}",
    ]
    if spec.waves:
        lines.append(f"  waves: {', '.join(spec.waves)}; now wave {rotation.wave + 1}")
    if rotation.next_tick and rotation.phase.active:
        lines.append(f"  next look: {format_instant(rotation.next_tick)}")
    rows = [("NODE", "INSTANCE", "PHASE", "SINCE", "NOTE")]
    for node in rotation.nodes:
        since = format_instant(node.since) if node.since else "-"
        note = node.note if node.phase is not NodePhase.PENDING else ""
        rows.append((node.name, node.instance_id, str(node.phase), since, note))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True)]
        lines.append(("  " + "  ".join([*cells, row[4]])).rstrip())
    return "\n".join(lines) + "\n"
