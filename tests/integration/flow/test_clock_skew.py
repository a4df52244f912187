"""Time from AWS, not the function's clock (issue 33.6), at plus and minus 15 minutes of skew.

A Spot warning is stale ``stale_notice_after`` (10 minutes) past its ``instance-action`` time.
Judged on a function clock 15 minutes fast, a fresh warning was "stale": its node was not
tainted at once and it went the voluntary way. Judged on one 15 minutes slow, a warning 20
minutes past its deadline was obeyed as urgent. The pipeline's clock is ``AwsClock``: the
function's clock corrected by the HTTP ``Date`` of EC2's DescribeInstances answer, which
every batch asks before deciding.

EC2 is a real boto3 client answered by botocore's ``Stubber`` (its answers carry
``ResponseMetadata.HTTPHeaders.date`` as a real answer's do); Kubernetes is the emulator,
over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from kubemu import Emulator
from lifeboat.aws.clock import AwsClock
from lifeboat.flow.pipeline import OneCluster, Pipeline
from lifeboat.kube.client import KubeApi
from lifeboat.model.instances import Ec2InstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Outcome, Report
from lifeboat.model.settings import Settings
from tests.support import kube
from tests.support.events import aws_event, stamp

INSTANCE, NODE, CLAIM = "i-0a1b2c3d4e5f60001", "ip-10-0-1-11.ec2.internal", "general-7xkqz"
# What AWS's clock says when the batch is handled.
AWS_NOW = datetime(2026, 12, 1, 14, 5, 30, tzinfo=UTC)
SKEW = timedelta(minutes=15)


@pytest.fixture
def emu() -> Iterator[Emulator]:
    pool = kube.nodepool(uid="pool-uid", requirements=[], budgets=[{"nodes": "10%"}])
    claim, node = kube.nodeclaim_and_node(
        name=CLAIM, instance_id=INSTANCE, node_name=NODE, nodepool_uid="pool-uid"
    )
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lifeboat"}}
    with Emulator([namespace, pool, claim, node]) as emulator:
        yield emulator


def _ec2(aws_now: datetime) -> Any:
    """An EC2 client whose DescribeInstances answers at ``aws_now`` (its Date header)."""
    client = boto3.client(
        "ec2", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    stubber = Stubber(client)
    instance = {
        "InstanceId": INSTANCE,
        "PrivateDnsName": NODE,
        "Placement": {"AvailabilityZone": "us-east-1a"},
        "State": {"Code": 16, "Name": "running"},
        "Tags": [
            {"Key": "karpenter.sh/nodeclaim", "Value": CLAIM},
            {"Key": "karpenter.sh/nodepool", "Value": "general"},
        ],
    }
    answer = {
        "Reservations": [{"Instances": [instance]}],
        "ResponseMetadata": {"HTTPHeaders": {"date": format_datetime(aws_now, usegmt=True)}},
    }
    stubber.add_response("describe_instances", answer)
    stubber.activate()
    return client


def _spot(warned: datetime) -> str:
    """A Spot warning sent at ``warned``: the instance goes two minutes later."""
    event = aws_event("spot-interruption", instance=INSTANCE, time=warned)
    event["detail"]["instance-action"] = "terminate"
    return json.dumps(event)


def _handle(emu: Emulator, body: str, clock: Callable[[], datetime], ec2: Any) -> Report:
    pipeline = Pipeline(
        clusters=OneCluster(KubeApi(emu.api_client())),
        directory=Ec2InstanceDirectory(ec2),
        settings=Settings(),
        clock=clock,
        ledger=MemoryLedger(),
    )
    (result,) = pipeline.process([body])
    assert result.error is None
    (report,) = result.reports
    return report


def _skewed(skew: timedelta) -> Callable[[], datetime]:
    return lambda: AWS_NOW + skew


def test_a_fresh_spot_warning_is_obeyed_on_a_clock_15_minutes_fast(emu: Emulator) -> None:
    """Warned 30 s ago. On the function's clock, 15 minutes fast, it is 13 minutes past its
    deadline: stale. On AWS's, it is fresh: the node is tainted at once and replaced."""
    body = _spot(AWS_NOW - timedelta(seconds=30))
    clock = AwsClock(_skewed(SKEW))
    ec2 = _ec2(AWS_NOW)
    clock.watch(ec2)
    report = _handle(emu, body, clock, ec2)
    assert report.outcome is Outcome.ACTED
    assert "stale" not in report.reason
    assert [a["type"] for a in report.actions][:2] == ["taint", "cordon"]
    assert abs(clock() - AWS_NOW) < timedelta(seconds=2)


def test_the_function_clock_alone_calls_it_stale(emu: Emulator) -> None:
    """What the test above guards against, shown: the same warning on the uncorrected fast
    clock is judged stale (this is what issue 33.6 found)."""
    body = _spot(AWS_NOW - timedelta(seconds=30))
    report = _handle(emu, body, _skewed(SKEW), _ec2(AWS_NOW))
    assert "stale" in report.reason


def test_a_stale_spot_warning_is_stale_on_a_clock_15_minutes_slow(emu: Emulator) -> None:
    """Warned 22 minutes ago (20 past its deadline, over the 10-minute limit). On the
    function's clock, 15 minutes slow, it is 5 past: it would be obeyed as urgent. On AWS's
    it is stale: judged from the present state, never tainted at once."""
    body = _spot(AWS_NOW - timedelta(minutes=22))
    clock = AwsClock(_skewed(-SKEW))
    ec2 = _ec2(AWS_NOW)
    clock.watch(ec2)
    report = _handle(emu, body, clock, ec2)
    assert "stale" in report.reason
    uncorrected = _handle(emu, body, _skewed(-SKEW), _ec2(AWS_NOW))
    assert "stale" not in uncorrected.reason


@pytest.mark.parametrize("skew", [SKEW, -SKEW, timedelta(0)], ids=["fast", "slow", "none"])
def test_the_aws_clock_tells_awss_time_within_a_second(skew: timedelta) -> None:
    local = [AWS_NOW + skew]
    clock = AwsClock(lambda: local[0])
    clock.observe(format_datetime(AWS_NOW, usegmt=True))
    assert abs(clock() - AWS_NOW) <= timedelta(seconds=1)
    # Later answers within the Date's one-second resolution do not move it.
    before = clock.skew
    local[0] += timedelta(seconds=10, milliseconds=400)
    clock.observe(format_datetime(AWS_NOW + timedelta(seconds=10), usegmt=True))
    assert clock.skew == before


@pytest.mark.parametrize(
    "date",
    [
        "",
        "yesterday",
        "Tue, 01 Dec 2026 14:05:30",
        stamp(AWS_NOW),
        "Sat, 01 Dec 2029 14:05:30 GMT",
        format_datetime(AWS_NOW + SKEW + timedelta(hours=11), usegmt=True),
        format_datetime(AWS_NOW + SKEW - timedelta(minutes=17), usegmt=True),
    ],
    ids=["empty", "words", "no-zone", "iso", "years-off", "hours-off", "17-minutes-off"],
)
def test_a_date_that_is_no_believable_http_date_is_ignored(date: str) -> None:
    """Hostile review of 33.6 (``hours-off``, ``17-minutes-off``): a Date from an endpoint
    that is not AWS (a proxy, a cache replaying an old answer) moved "now" by up to 12 hours
    from one answer. AWS refuses a SigV4 request signed more than 15 minutes off its clock, so
    a real answer is never further off than that: the bound is 16 minutes."""
    clock = AwsClock(lambda: AWS_NOW + SKEW)
    clock.observe(date)
    assert clock.skew == timedelta(0)
