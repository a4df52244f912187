"""Properties of ``handle_batch`` over arbitrary SQS batches.

Whatever the records carry (arbitrary JSON, huge or odd-unicode strings, missing envelopes,
SNS-wrapped garbage, no body, a body that is not text), ``handle_batch`` never raises except
the documented ``ValueError`` for an event that is not an SQS batch; every record either is
returned in ``batchItemFailures`` or produced reports, each with a reason; a malformed one is
``rejected``; an event from another account or region than the stack's is ``rejected``.

The pipeline's directory knows no instance, so nothing reaches Kubernetes (the kube client is
a stub that fails the test if called): the properties are about parsing and accounting.
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lifeboat.flow.pipeline import MessageResult, OneCluster, Pipeline
from lifeboat.model.instances import StaticInstanceDirectory
from lifeboat.model.ledger import MemoryLedger
from lifeboat.model.report import Outcome
from lifeboat.model.settings import Settings
from lifeboat.runtime.handler import handle_batch
from tests.support.paths import EVENTS

ACCOUNT = "123456789012"
REGION = "us-east-1"
SAMPLES = [json.loads(path.read_text()) for path in sorted(EVENTS.glob("*.json"))]
RAW = [json.loads(path.read_text()) for path in sorted((EVENTS / "raw").glob("*.json"))]
ENVELOPE_KEYS = ("id", "source", "detail-type", "detail", "time")


class _NoKube:
    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"Kubernetes was called ({name}) for an unknown instance")


class _Quiet:
    def log(self, *args: Any, **kwargs: Any) -> None:
        pass

    def error(self, *args: Any, **kwargs: Any) -> None:
        pass


class _Recording:
    """The pipeline, remembering the results of the last batch (in record order)."""

    def __init__(self) -> None:
        self.pipeline = Pipeline(
            clusters=OneCluster(_NoKube()),  # type: ignore[arg-type]
            directory=StaticInstanceDirectory(),
            settings=Settings(account_id=ACCOUNT, region=REGION),
            clock=lambda: datetime(2026, 12, 1, 14, 5, tzinfo=UTC),
            ledger=MemoryLedger(),
        )
        self.results: list[MessageResult] = []
        process = self.pipeline.process

        def recording(bodies: Any, **kwargs: Any) -> list[MessageResult]:
            self.results = process(bodies, **kwargs)
            return self.results

        self.pipeline.process = recording  # type: ignore[method-assign]


RECORDING = _Recording()

# -- bodies -----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@st.composite
def broken_envelopes(draw: st.DrawFn) -> str:
    """A sample event with an envelope field removed, or of the wrong JSON type."""
    event = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    key = draw(st.sampled_from(ENVELOPE_KEYS))
    if draw(st.booleans()):
        del event[key]
    else:
        wrong_type = dict if key == "detail" else str
        event[key] = draw(json_values.filter(lambda value: not isinstance(value, wrong_type)))
    return _dumps(event)


@st.composite
def sns_garbage(draw: st.DrawFn) -> str:
    message = draw(
        st.one_of(
            st.text(max_size=40),
            json_values.map(_dumps).filter(lambda text: not text.startswith("{")),
        )
    )
    return _dumps(
        {
            "Type": "Notification",
            "MessageId": draw(st.text(max_size=20)),
            "TopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:topic",
            "Message": message,
        }
    )


@st.composite
def foreign_events(draw: st.DrawFn) -> tuple[str, str]:
    """A well-formed event from another account or region: (body, what differs)."""
    event = copy.deepcopy(draw(st.sampled_from(SAMPLES)))
    event["id"] = draw(st.uuids()).hex
    which = draw(st.sampled_from(["account", "region"]))
    other = draw(st.text(alphabet="0123456789abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=14))
    ours = ACCOUNT if which == "account" else REGION
    event[which] = other if other != ours else other + "x"
    return _dumps(event), which


MALFORMED = "malformed"
ANY = "any"
FOREIGN = "foreign"

bodies = st.one_of(
    st.tuples(st.text(max_size=200), st.just(ANY)),  # odd unicode, sometimes valid JSON
    st.tuples(
        st.text(max_size=200).filter(lambda t: not t.strip().startswith(("{", "["))),
        st.just(MALFORMED),
    ),
    st.tuples(
        json_values.filter(lambda v: not isinstance(v, dict)).map(_dumps), st.just(MALFORMED)
    ),
    st.tuples(json_values.map(_dumps), st.just(ANY)),
    st.tuples(broken_envelopes(), st.just(MALFORMED)),
    st.tuples(sns_garbage(), st.just(MALFORMED)),
    st.tuples(
        st.sampled_from(["x" * 300_000, "{" * 5_000, "\udcff\u0000\U0010ffff" * 500]), st.just(ANY)
    ),
    st.tuples(st.sampled_from(SAMPLES + RAW).map(_dumps), st.just(ANY)),
    foreign_events().map(lambda pair: (pair[0], FOREIGN)),
)


@st.composite
def records(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    record: dict[str, Any] = {"messageId": draw(st.text(min_size=1, max_size=36))}
    shape = draw(st.integers(0, 19))
    if shape == 0:  # no body at all
        return record, MALFORMED
    if shape == 1:  # a body that is not text
        record["body"] = draw(json_values.filter(lambda v: not isinstance(v, str | dict)))
        return record, MALFORMED
    body, expectation = draw(bodies)
    record["body"] = body
    if draw(st.booleans()):
        record.update(receiptHandle="r", eventSource="aws:sqs", awsRegion=REGION)
    return record, expectation


@settings(
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(records(), min_size=1, max_size=10))
def test_every_record_is_accounted_for(batch: list[tuple[dict[str, Any], str]]) -> None:
    event = {"Records": [record for record, _ in batch]}
    response = handle_batch(event, None, RECORDING.pipeline, logger=_Quiet())
    failed = {item["itemIdentifier"] for item in response["batchItemFailures"]}
    results = RECORDING.results
    assert len(results) == len(batch)
    for (record, expectation), result in zip(batch, results, strict=True):
        if record["messageId"] in failed:
            continue
        assert result.error is None
        assert result.reports, f"record {record['messageId']!r} deleted without a report"
        assert all(report.reason.strip() for report in result.reports)
        outcomes = {report.outcome for report in result.reports}
        if expectation == MALFORMED:
            assert outcomes == {Outcome.REJECTED}, (record, result.reports)
        elif expectation == FOREIGN:
            duplicate = all("duplicate delivery" in r.reason for r in result.reports)
            assert outcomes == {Outcome.REJECTED} or duplicate, (record, result.reports)
            if outcomes == {Outcome.REJECTED}:
                assert all("this stack serves" in r.reason for r in result.reports)
    # No valid record fails here: nothing can (no AWS, no Kubernetes call is made).
    assert failed == set()


@settings(max_examples=1000, deadline=None)
@given(json_values | st.dictionaries(st.just("Records"), json_values, max_size=1))
def test_anything_else_is_handled_or_a_value_error(event: Any) -> None:
    try:
        response = handle_batch(event, None, RECORDING.pipeline, logger=_Quiet())
    except ValueError as error:
        message = str(error)
    else:
        assert isinstance(response.get("batchItemFailures"), list)
        return
    assert "SQS batch event" in message


@pytest.mark.parametrize("record", [{"body": "{}"}, {"messageId": "", "body": "{}"}, "text"])
def test_a_record_without_a_message_id_is_not_an_sqs_event(record: Any) -> None:
    with pytest.raises(ValueError, match="SQS batch event"):
        handle_batch({"Records": [record]}, None, RECORDING.pipeline, logger=_Quiet())


@pytest.mark.parametrize(
    ("account", "region", "rejected"),
    [
        (ACCOUNT, REGION, False),
        (None, REGION, False),  # moto delivers events without "account": not a mismatch
        (ACCOUNT, None, False),
        ("210987654321", REGION, True),
        (ACCOUNT, "eu-west-1", True),
    ],
)
def test_account_and_region_are_checked(
    account: str | None, region: str | None, rejected: bool
) -> None:
    event = copy.deepcopy(json.loads((EVENTS / "spot-interruption.json").read_text()))
    event["id"] = f"origin-{account}-{region}"
    for key, value in (("account", account), ("region", region)):
        if value is None:
            del event[key]
        else:
            event[key] = value
    batch = {"Records": [{"messageId": "m", "body": json.dumps(event)}]}
    assert handle_batch(batch, None, RECORDING.pipeline, logger=_Quiet()) == {
        "batchItemFailures": []
    }
    [report] = RECORDING.results[0].reports
    if rejected:
        assert report.outcome is Outcome.REJECTED
        assert "this stack serves" in report.reason
    else:  # an unknown instance: ignored, not rejected
        assert report.outcome is Outcome.IGNORED


def test_a_deeply_nested_body_fails_alone() -> None:
    batch = {
        "Records": [
            {"messageId": "deep", "body": "[" * 100_000},
            {"messageId": "fine", "body": json.dumps(SAMPLES[0])},
        ]
    }
    response = handle_batch(batch, None, RECORDING.pipeline, logger=_Quiet())
    assert response == {"batchItemFailures": []}
    assert RECORDING.results[0].reports[0].outcome is Outcome.REJECTED
