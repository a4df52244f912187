"""``lifeboat fleet``: what Lifeboat did across an organisation in the last hours.

Run in the monitoring account (deploy/fleet-bus.yaml), where CloudWatch cross-account
observability links every Lifeboat stack's metrics (template.yaml, FleetMonitoringSinkArn).
It reads Lifeboat's ``Outcomes`` metric (one per warning, with the dimensions cluster,
nodepool, kind and outcome: lifeboat/telemetry/observability.py) of every linked account, and each
account's dead-letter queue depth, and prints, per account and cluster, how many warnings
were acted on, deferred, ignored and rejected. Run in one account (no links), it shows that
account alone.

Two kinds of call, whatever the size of the fleet: ``ListMetrics`` (with
``IncludeLinkedAccounts``, paginated) and ``GetMetricData`` (500 queries a call), each query
one metric of one account summed over the whole window.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

from lifeboat_local.common import EXIT_OK, UsageError, add_command, parse_instant

NAMESPACE = "Lifeboat"
OUTCOMES = ("acted", "deferred", "ignored", "rejected")
# Dimensions of the Outcomes metric that carry everything (observability.DIMENSIONS + service).
FULL_DIMENSIONS = frozenset({"service", "cluster", "nodepool", "kind", "outcome"})
QUERIES_PER_CALL = 500
# What observability.UNKNOWN stands for here (a rejected message names no cluster).
NO_CLUSTER = "-"


@dataclass
class ClusterCounts:
    outcomes: dict[str, float] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0.0))
    # NodePool -> warnings acted on or deferred there.
    nodepools: dict[str, float] = field(default_factory=lambda: defaultdict(float))


@dataclass
class Fleet:
    start: datetime
    end: datetime
    # account -> cluster -> counts
    clusters: dict[str, dict[str, ClusterCounts]] = field(default_factory=dict)
    # account -> messages in its dead-letter queue(s) at the end of the window (the maximum
    # of the last period); absent: no dead-letter queue metric seen.
    dead_letters: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "accounts": {
                account: {
                    "clusters": {
                        cluster: {
                            **{k: int(v) for k, v in counts.outcomes.items()},
                            "nodepools": {k: int(v) for k, v in sorted(counts.nodepools.items())},
                        }
                        for cluster, counts in sorted(clusters.items())
                    },
                    "dead_letters": _int_or_none(self.dead_letters.get(account)),
                }
                for account, clusters in sorted(self._accounts().items())
            },
        }

    def _accounts(self) -> dict[str, dict[str, ClusterCounts]]:
        accounts = {account: dict(clusters) for account, clusters in self.clusters.items()}
        for account in self.dead_letters:
            accounts.setdefault(account, {})
        return accounts


def _int_or_none(value: float | None) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class _Series:
    account: str
    metric: dict[str, Any]  # Namespace, MetricName, Dimensions as CloudWatch lists them


def _listed(cloudwatch: Any, home: str, **query: Any) -> Iterator[_Series]:
    """Metrics of every linked account (``OwningAccounts`` runs parallel to ``Metrics``); a
    page without it (an account that is no monitoring account) is the caller's own."""
    seen: set[tuple[str, str]] = set()  # each metric once, were it listed twice
    paginator = cloudwatch.get_paginator("list_metrics")
    for page in paginator.paginate(IncludeLinkedAccounts=True, **query):
        metrics = page.get("Metrics", [])
        owners = page.get("OwningAccounts") or [home] * len(metrics)
        for metric, owner in zip(metrics, owners, strict=True):
            key = (owner, json.dumps(metric, sort_keys=True))
            if key not in seen:
                seen.add(key)
                yield _Series(owner, metric)


def _sums(
    cloudwatch: Any, series: list[_Series], start: datetime, end: datetime, stat: str, period: int
) -> list[float]:
    """One value per series: ``stat`` over ``period`` seconds ending at ``end``, summed (for
    Sum) or the last one (for Maximum)."""
    values: list[float] = [0.0] * len(series)
    for first in range(0, len(series), QUERIES_PER_CALL):
        chunk = series[first : first + QUERIES_PER_CALL]
        queries = [
            {
                "Id": f"m{first + index}",
                "MetricStat": {"Metric": s.metric, "Period": period, "Stat": stat},
                "AccountId": s.account,
                "ReturnData": True,
            }
            for index, s in enumerate(chunk)
        ]
        kwargs: dict[str, Any] = {"MetricDataQueries": queries, "StartTime": start, "EndTime": end}
        while True:
            answer = cloudwatch.get_metric_data(**kwargs)
            for result in answer.get("MetricDataResults", []):
                index = int(result["Id"][1:])
                points = result.get("Values", [])
                if stat == "Sum":
                    values[index] += sum(points)
                elif points:  # newest first (the default ScanBy)
                    values[index] = max(values[index], points[0])
            token = answer.get("NextToken")
            if not token:
                break
            kwargs["NextToken"] = token
    return values


def _dimensions(metric: dict[str, Any]) -> dict[str, str]:
    return {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}


def read_fleet(cloudwatch: Any, home: str, start: datetime, end: datetime) -> Fleet:
    """What the linked accounts' Lifeboat metrics say about ``start``..``end``.

    ``home``: the caller's account, the owner of metrics listed without one."""
    fleet = Fleet(start, end)
    window = max(60, int((end - start).total_seconds()) // 60 * 60)
    outcomes = [
        s
        for s in _listed(cloudwatch, home, Namespace=NAMESPACE, MetricName="Outcomes")
        if set(_dimensions(s.metric)) == FULL_DIMENSIONS
    ]
    for series, value in zip(
        outcomes, _sums(cloudwatch, outcomes, start, end, "Sum", window), strict=True
    ):
        if not value:
            continue
        dims = _dimensions(series.metric)
        cluster = dims["cluster"] if dims["cluster"] not in ("", "unknown") else NO_CLUSTER
        counts = fleet.clusters.setdefault(series.account, {}).setdefault(cluster, ClusterCounts())
        outcome = dims["outcome"]
        counts.outcomes[outcome] = counts.outcomes.get(outcome, 0.0) + value
        if outcome in ("acted", "deferred") and dims["nodepool"] not in ("", "unknown"):
            counts.nodepools[dims["nodepool"]] += value
    queues = [
        s
        for s in _listed(
            cloudwatch, home, Namespace="AWS/SQS", MetricName="ApproximateNumberOfMessagesVisible"
        )
        if "DeadLetterQueue" in _dimensions(s.metric).get("QueueName", "")
    ]
    # The depth at the end: the maximum of the last five minutes.
    recent = end - timedelta(minutes=5)
    for series, value in zip(
        queues, _sums(cloudwatch, queues, recent, end, "Maximum", 300), strict=True
    ):
        fleet.dead_letters[series.account] = fleet.dead_letters.get(series.account, 0.0) + value
    return fleet


# --- the command ----------------------------------------------------------------------------


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "fleet",
        summary="what Lifeboat did across the organisation's accounts and clusters",
        description="Per account and cluster: warnings acted on, deferred, ignored and "
        "rejected over the last hours, and each account's dead-letter queue depth, from the "
        "Lifeboat metrics CloudWatch cross-account observability links to the monitoring "
        "account (docs/organisation.md). AWS credentials of that account "
        "(cloudwatch:ListMetrics, cloudwatch:GetMetricData).",
        examples="""
            lifeboat fleet
            lifeboat fleet --hours 24 --region eu-west-1 --json
            AWS_PROFILE=monitoring lifeboat fleet --until 2026-12-01T14:05:00Z
        """,
    )
    parser.add_argument("--hours", type=int, default=3, help="how far back (default: %(default)s)")
    parser.add_argument(
        "--until", type=parse_instant, default=None, help="end of the window (default: now)"
    )
    parser.add_argument("--region", default=None, help="the monitoring region (default: AWS's)")
    parser.add_argument("--json", action="store_true", help="one JSON document")


def check_args(args: argparse.Namespace) -> None:
    if not 1 <= args.hours <= 24 * 63:
        raise UsageError(
            f"--hours {args.hours}: expected 1 to {24 * 63} "
            "(CloudWatch keeps 63 days of 5-minute data)"
        )


def run(args: argparse.Namespace, out: TextIO | None = None, session: Any = None) -> int:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    out = out or sys.stdout
    end = (args.until or datetime.now(UTC)).astimezone(UTC)
    start = end - timedelta(hours=args.hours)
    try:
        session = session or boto3.Session(region_name=args.region)
        if not session.region_name:
            raise UsageError("no AWS region: pass --region or set AWS_REGION")
        home = session.client("sts").get_caller_identity()["Account"]
        fleet = read_fleet(session.client("cloudwatch"), home, start, end)
    except (BotoCoreError, ClientError) as error:
        raise UsageError(f"CloudWatch: {error}") from None
    if args.json:
        out.write(json.dumps(fleet.to_json(), indent=2) + "\n")
    else:
        write_human(fleet, out)
    return EXIT_OK


def write_human(fleet: Fleet, out: TextIO) -> None:
    accounts = fleet._accounts()
    clusters = sum(len(c) for c in accounts.values())
    hours = (fleet.end - fleet.start).total_seconds() / 3600
    out.write(
        f"Lifeboat fleet, {fleet.start:%Y-%m-%d %H:%M} to {fleet.end:%Y-%m-%d %H:%M} UTC "
        f"({hours:g} h): {len(accounts)} account(s), {clusters} cluster(s)\n"
    )
    if not accounts:
        out.write("no Lifeboat metrics in this window (are the accounts linked?)\n")
        return
    header = ("ACCOUNT", "CLUSTER", *(o.upper() for o in OUTCOMES), "DLQ", "BUSIEST NODEPOOLS")
    rows = [header]
    for account, by_cluster in sorted(accounts.items()):
        dlq = fleet.dead_letters.get(account)
        for index, (cluster, counts) in enumerate(sorted(by_cluster.items()) or [("", None)]):
            outcomes = counts.outcomes if counts else {}
            pools = sorted((counts.nodepools if counts else {}).items(), key=lambda p: -p[1])
            rows.append(
                (
                    account,
                    cluster,
                    *(str(int(outcomes.get(o, 0))) for o in OUTCOMES),
                    "" if dlq is None or index else str(int(dlq)),
                    ", ".join(f"{name} {int(n)}" for name, n in pools[:3]),
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        cells = [
            cell.rjust(width) if 2 <= i <= 6 else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        out.write("  ".join(cells).rstrip() + "\n")
