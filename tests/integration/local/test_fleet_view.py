"""``lifeboat fleet`` through boto3 to moto: Lifeboat's Outcomes metrics (as
lifeboat/telemetry/observability.py publishes them) and the dead-letter queues' depth, per
account and
cluster, over the last hours.

moto keeps one account's metrics and does not model CloudWatch cross-account observability:
``ListMetrics`` with ``IncludeLinkedAccounts`` never returns ``OwningAccounts``. The linked
test adds that field to moto's answer as a monitoring account receives it (one owner per
metric, parallel to ``Metrics``), so the command's reading of it is what is tested; the
values still come from moto.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from lifeboat_local.cli import COMMANDS, main

NOW = datetime.now(UTC).replace(microsecond=0)
HOME = "123456789012"
OTHER = "222222222222"


def _outcome(
    cloudwatch: Any,
    cluster: str,
    outcome: str,
    count: float,
    *,
    nodepool: str = "general",
    kind: str = "spot-interruption",
    ago: timedelta = timedelta(hours=1),
) -> None:
    dimensions = {
        "service": "lifeboat",
        "cluster": cluster,
        "nodepool": nodepool,
        "kind": kind,
        "outcome": outcome,
    }
    metric = {
        "MetricName": "Outcomes",
        "Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()],
        "Value": count,
        "Unit": "Count",
        "Timestamp": NOW - ago,
    }
    cloudwatch.put_metric_data(Namespace="Lifeboat", MetricData=[metric])
    # The other dimension sets of the same document (counted once, not again).
    for names in (("kind", "outcome"), ("outcome",), ("cluster",)):
        subset = {"service": "lifeboat"} | {name: dimensions[name] for name in names}
        metric = metric | {"Dimensions": [{"Name": k, "Value": v} for k, v in subset.items()]}
        cloudwatch.put_metric_data(Namespace="Lifeboat", MetricData=[metric])


def _dead_letters(cloudwatch: Any, queue: str, depth: float) -> None:
    cloudwatch.put_metric_data(
        Namespace="AWS/SQS",
        MetricData=[
            {
                "MetricName": "ApproximateNumberOfMessagesVisible",
                "Dimensions": [{"Name": "QueueName", "Value": queue}],
                "Value": depth,
                "Timestamp": NOW - timedelta(minutes=2),
            }
        ],
    )


def _fleet(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code = main(["fleet", "--json", "--until", NOW.isoformat(), *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    document: dict[str, Any] = json.loads(captured.out)
    return document


def test_fleet_is_a_command_beside_the_others() -> None:
    assert "fleet" in COMMANDS


def test_one_account_shows_its_clusters_outcomes_and_dead_letters(
    aws: boto3.Session, capsys: pytest.CaptureFixture[str]
) -> None:
    cloudwatch = aws.client("cloudwatch")
    _outcome(cloudwatch, "payments", "acted", 3)
    _outcome(cloudwatch, "payments", "acted", 2, nodepool="batch", kind="rebalance-recommendation")
    _outcome(cloudwatch, "payments", "deferred", 4, nodepool="batch", kind="scheduled-change")
    _outcome(cloudwatch, "payments", "acted", 50, ago=timedelta(hours=5))  # before the window
    _outcome(cloudwatch, "unknown", "rejected", 1, nodepool="unknown", kind="unsupported")
    _dead_letters(cloudwatch, "lifeboat-DeadLetterQueue-AbC", 7)
    _dead_letters(cloudwatch, "lifeboat-Queue-AbC", 90)  # the main queue: not a dead letter
    document = _fleet(capsys)
    assert document["accounts"] == {
        HOME: {
            "clusters": {
                "-": {"acted": 0, "deferred": 0, "ignored": 0, "rejected": 1, "nodepools": {}},
                "payments": {
                    "acted": 5,
                    "deferred": 4,
                    "ignored": 0,
                    "rejected": 0,
                    "nodepools": {"batch": 6, "general": 3},
                },
            },
            "dead_letters": 7,
        }
    }
    # A longer window takes the older warnings in.
    longer = _fleet(capsys, "--hours", "6")
    assert longer["accounts"][HOME]["clusters"]["payments"]["acted"] == 55


def _owned_by(owner_of: Callable[[dict[str, str]], str]) -> Callable[..., None]:
    """An ``after-call`` hook giving moto's ListMetrics answer the ``OwningAccounts`` a
    monitoring account receives."""

    def add_owners(parsed: dict[str, Any], **_: Any) -> None:
        parsed["OwningAccounts"] = [
            owner_of({d["Name"]: d["Value"] for d in m.get("Dimensions", [])})
            for m in parsed.get("Metrics", [])
        ]

    return add_owners


def test_linked_accounts_are_shown_apart(
    aws: boto3.Session, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cloudwatch = aws.client("cloudwatch")
    _outcome(cloudwatch, "payments", "acted", 3)
    _outcome(cloudwatch, "search", "acted", 1)
    _outcome(cloudwatch, "search", "rejected", 2)
    _dead_letters(cloudwatch, "lifeboat-DeadLetterQueue-X", 0)
    _dead_letters(cloudwatch, "other-DeadLetterQueue-Y", 4)

    def owner(dimensions: dict[str, str]) -> str:
        if dimensions.get("cluster") == "search" or "other" in dimensions.get("QueueName", ""):
            return OTHER
        return HOME

    asked: list[dict[str, Any]] = []
    real_session = boto3.Session

    def session(**kwargs: Any) -> boto3.Session:
        made = real_session(**kwargs)
        made.events.register("after-call.cloudwatch.ListMetrics", _owned_by(owner))
        made.events.register(
            "provide-client-params.cloudwatch.GetMetricData",
            lambda params, **_: asked.extend(params["MetricDataQueries"]),
        )
        return made

    monkeypatch.setattr(boto3, "Session", session)
    document = _fleet(capsys)
    accounts = document["accounts"]
    assert set(accounts) == {HOME, OTHER}
    assert accounts[HOME]["clusters"]["payments"]["acted"] == 3
    assert accounts[HOME]["dead_letters"] == 0
    assert accounts[OTHER]["clusters"]["search"]["acted"] == 1
    assert accounts[OTHER]["clusters"]["search"]["rejected"] == 2
    assert accounts[OTHER]["dead_letters"] == 4
    # Each query names the account whose metric it reads (a monitoring account must).
    assert {q["AccountId"] for q in asked} == {HOME, OTHER}

    main(["fleet", "--until", NOW.isoformat()])
    text = capsys.readouterr().out
    assert "2 account(s), 2 cluster(s)" in text
    [search] = [line for line in text.splitlines() if "search" in line]
    assert search.split()[:6] == [OTHER, "search", "1", "0", "0", "2"]


def test_a_window_out_of_range_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["fleet", "--hours", "0"])
    assert exit_.value.code == 1
    assert "--hours 0" in capsys.readouterr().err


def test_no_metrics_says_so(aws: boto3.Session, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fleet", "--until", NOW.isoformat()]) == 0
    assert "no Lifeboat metrics in this window" in capsys.readouterr().out
