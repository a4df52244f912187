"""``lifeboat rotate``: ask the Lifeboat stack to rotate nodes, or to pause, resume or cancel
a rotation, by putting the request on the stack's command bus (``PutEvents``).

The stack's rotation rule, on that bus only, brings the event into Lifeboat's queue; the
request is checked here with the Lambda's own parser first, so a mistake is reported at
once, naming the field, not later in the function's logs. ``--out FILE`` writes the event
instead, for ``lifeboat replay``.
Any other automation the stack names in ``RotationOperatorArns`` may put the same events
(``source`` ``lifeboat``; see ``lifeboat.rotation.request``); no other principal may.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any, TextIO

from lifeboat.model.notice import MalformedMessage
from lifeboat.rotation.request import (
    NAME_MAX,
    RotationSpec,
    Verb,
    command_event,
    parse_command,
)
from lifeboat_local.common import EXIT_OK, EXIT_USAGE, UsageError, add_command

NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
# The stack's command bus (template.yaml CommandEventBusName's default): the only bus its
# rotation rule listens on, and only the principals the stack names may put on it.
DEFAULT_EVENT_BUS = "lifeboat-commands"


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "rotate",
        summary="rotate nodes (or pause, resume, cancel a rotation): puts the request on the bus",
        description="Ask Lifeboat to rotate nodes node by node: cordon, drain through the "
        "Eviction API (replace through a NodeClaim for Karpenter nodes), and wait until the "
        "evicted pods run Ready elsewhere before the next node, within NodePool budgets and "
        "windows. Puts a 'Lifeboat Rotation ... Requested' event on the EventBridge bus.",
        examples="""
            lifeboat rotate legacy-to-karpenter --cluster-name prod-a --node-group legacy
            lifeboat rotate legacy-to-karpenter --cluster-name prod-a --pause --uid UID
            lifeboat rotate legacy-to-karpenter --cluster-name prod-a --node-group legacy \\
                --out events/rotation/legacy-to-karpenter.json
        """,
    )
    _add_target(parser)
    _add_node_selectors(parser)
    _add_pacing(parser)
    _add_control_verbs(parser)
    _add_delivery(parser)


def _add_target(parser: argparse.ArgumentParser) -> None:
    """The rotation's name (ROTATION) and the cluster it runs in."""
    parser.add_argument(
        "name",
        metavar="ROTATION",
        help=f"the rotation's name: lowercase letters, digits and '-', at most {NAME_MAX}",
    )
    parser.add_argument(
        "--cluster-name",
        metavar="EKS_CLUSTER",
        help="the EKS cluster (required when the stack manages several)",
    )


def _add_node_selectors(parser: argparse.ArgumentParser) -> None:
    """The argument group choosing a new rotation's nodes (node group, labels, AMIs)."""
    nodes = parser.add_argument_group("which nodes (a new rotation; all given must match)")
    nodes.add_argument(
        "--node-group", metavar="GROUP", help=f"the nodes labelled {NODEGROUP_LABEL}=GROUP"
    )
    nodes.add_argument(
        "--label", action="append", default=[], metavar="KEY=VALUE", help="a node label"
    )
    nodes.add_argument("--ami", action="append", default=[], metavar="AMI_ID", help="an AMI")


def _add_pacing(parser: argparse.ArgumentParser) -> None:
    """How fast the rotation goes and when it stops: nodes at once, the health gate's
    timeout and AMIs, waves."""
    parser.add_argument(
        "--max-in-flight", type=int, default=1, metavar="N", help="nodes at once (default 1)"
    )
    parser.add_argument(
        "--health-timeout",
        type=int,
        default=600,
        metavar="SECONDS",
        help="how long a drained node's pods may take to run Ready elsewhere before the "
        "rotation stops (default 600)",
    )
    parser.add_argument(
        "--allowed-ami",
        action="append",
        default=[],
        metavar="AMI_ID",
        help="AMI validation: the health gate also requires the nodes that took the drained "
        "pods to run one of these (repeatable)",
    )
    parser.add_argument(
        "--waves",
        metavar="SIZES",
        help="rotate in waves, pausing at a checkpoint after each until resumed (or rolled "
        "back): cumulative sizes, node counts or percentages, e.g. 1,10%%,100%%",
    )


def _add_control_verbs(parser: argparse.ArgumentParser) -> None:
    """--pause, --resume, --cancel, --rollback: mutually exclusive, each sets ``verb``;
    --uid names the rotation they are for."""
    parser.add_argument(
        "--uid",
        metavar="UID",
        help="the rotation's uid (printed when it was requested; `lifeboat status` shows it): "
        "required with --pause, --resume, --cancel and --rollback, so that a command never "
        "reaches another rotation of the same name; with a new rotation, the uid to give it "
        "(default: a new UUID)",
    )
    control = parser.add_mutually_exclusive_group()
    for verb in (Verb.PAUSE, Verb.RESUME, Verb.CANCEL, Verb.ROLLBACK):
        control.add_argument(
            f"--{verb}",
            dest="verb",
            action="store_const",
            const=verb,
            help=f"{verb} the rotation ROTATION instead of starting one",
        )


def _add_delivery(parser: argparse.ArgumentParser) -> None:
    """Where the event goes: the command bus and its region, or a file (--out)."""
    parser.add_argument(
        "--event-bus",
        default=DEFAULT_EVENT_BUS,
        metavar="NAME",
        help=f"the stack's command bus (output CommandEventBusName; default {DEFAULT_EVENT_BUS})",
    )
    parser.add_argument("--region", help="the bus's region (default: the AWS configuration's)")
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write the event to FILE (for lifeboat replay) instead of putting it on the bus",
    )


def check_args(args: argparse.Namespace) -> None:
    selects = args.node_group or args.label or args.ami
    if args.verb is None and not selects:
        raise UsageError("rotate: a new rotation needs --node-group, --label or --ami")
    if args.verb is not None and selects:
        raise UsageError(f"rotate: --{args.verb} names a rotation; it takes no node selector")
    if args.verb is not None and not args.uid:
        raise UsageError(
            f"rotate: --{args.verb} needs --uid (the rotation's uid: `lifeboat status "
            f"{args.name}` shows it)"
        )
    if args.waves:
        check_waves(args.waves)


def check_waves(text: str) -> None:
    """``--waves`` sizes are cumulative: each wave's size (counted like the one before it,
    nodes or percent) larger than the last, so ``5,2`` is a usage error, not five nodes then
    one more (the plan would take at least one more node per wave without a word)."""
    # A size that is no number is the request parser's to refuse, with its own words.
    sizes = [s for s in (w.strip() for w in text.split(",")) if s.rstrip("%").isdigit()]
    for percent in (True, False):
        same = [(s, int(s.rstrip("%"))) for s in sizes if s.endswith("%") == percent]
        for (before, low), (after, high) in pairwise(same):
            if high <= low:
                raise UsageError(
                    f"rotate: --waves {text}: the sizes are cumulative (nodes rotated by the "
                    f"end of each wave), so {after} after {before} adds nothing; give "
                    "increasing sizes, e.g. 1,10%,100%"
                )


def build_event(args: argparse.Namespace, now: datetime) -> dict[str, Any]:
    """The EventBridge event, checked with the Lambda's own parser (a usage error naming the
    field when it would be rejected there)."""
    verb = args.verb or Verb.REQUEST
    spec = None
    if verb is Verb.REQUEST:
        labels = dict(_label(text) for text in args.label)
        if args.node_group:
            labels[NODEGROUP_LABEL] = args.node_group
        spec = RotationSpec(
            name=args.name,
            cluster=args.cluster_name,
            labels=labels,
            amis=tuple(args.ami),
            max_in_flight=args.max_in_flight,
            health_timeout=timedelta(seconds=args.health_timeout),
            waves=tuple(w.strip() for w in (args.waves or "").split(",") if w.strip()),
            allowed_amis=tuple(args.allowed_ami),
            uid=args.uid or str(uuid.uuid4()),  # what its commands will name it by
        )
    event = command_event(
        verb, args.name, cluster=args.cluster_name, spec=spec, now=now, uid=args.uid or ""
    )
    try:
        parse_command(event)
    except MalformedMessage as error:
        raise UsageError(f"rotate: {_flag_names(error.reason)}") from None
    return event


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    event = build_event(args, datetime.now(UTC))
    if args.out is not None:
        try:
            args.out.write_text(json.dumps(event, indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            raise UsageError(f"--out {args.out}: {error.strerror or error}") from None
        out.write(
            f"wrote {event['detail-type']} for rotation {args.name} "
            f"(uid {event['detail']['uid']}) to {args.out}\n"
        )
        return EXIT_OK
    return put_event(event, args.event_bus, args.region, out)


def put_event(event: dict[str, Any], bus: str, region: str | None, out: TextIO) -> int:
    """PutEvents of ``event``; 1 with EventBridge's own words when it was not accepted."""
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    entry = {
        "Source": event["source"],
        "DetailType": event["detail-type"],
        "Detail": json.dumps(event["detail"]),
        "EventBusName": bus,
    }
    try:
        answer = boto3.client("events", region_name=region).put_events(Entries=[entry])
    except (BotoCoreError, ClientError) as error:
        print(f"lifeboat: error: PutEvents on bus {bus}: {error}", file=sys.stderr)
        return EXIT_USAGE
    [result] = answer["Entries"]
    if answer.get("FailedEntryCount") or "EventId" not in result:
        why = f"{result.get('ErrorCode', '?')}: {result.get('ErrorMessage', '')}".strip()
        print(f"lifeboat: error: PutEvents on bus {bus} refused the event: {why}", file=sys.stderr)
        return EXIT_USAGE
    name, uid = event["detail"]["rotation"], event["detail"]["uid"]
    out.write(
        f"put {event['detail-type']} for rotation {name} (uid {uid}) on bus {bus}: "
        f"{result['EventId']}\n"
    )
    return EXIT_OK


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"--label {text!r}: expected KEY=VALUE")
    return key, value


def _flag_names(reason: str) -> str:
    """The parser's field names, as the flags that set them."""
    for field, flag in (
        ("detail.rotation", "ROTATION"),
        ("detail.selector.labels", "--label/--node-group"),
        ("detail.selector.amis", "--ami"),
        ("detail.selector", "--label/--node-group/--ami"),
        ("detail.maxInFlight", "--max-in-flight"),
        ("detail.healthGate.timeoutSeconds", "--health-timeout"),
        ("detail.cluster", "--cluster-name"),
        ("detail.uid", "--uid"),
    ):
        if reason.startswith(field):
            return flag + reason[len(field) :]
    return reason
