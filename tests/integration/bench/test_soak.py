"""Issue "Nothing lost, nothing broken": 2,000 mixed events with duplicates and faults through
``handle_batch`` and a simulated SQS queue; every message accounted for, no action repeated.

The soak itself is ``bench.soak`` (``python -m bench.soak --events 10000`` runs it larger).
Each soak is one test on purpose: under ``pytest -n auto`` a module-scoped fixture would run
once per worker that receives one of its tests.

``make test`` runs a small soak (300 events, fault and duplicate rates raised so that every
kind of trouble still occurs); the larger ones are marked ``bench`` (``make bench-check``).
"""

from __future__ import annotations

import pytest

from bench.soak import SoakConfig, SoakResult, run_soak, unlucky


def _check_accounting(soak: SoakResult) -> None:
    assert soak.violations == []
    assert soak.summary()["lost"] == 0
    fates = soak.messages_by_fate
    assert sum(fates.values()) == len(soak.sent) + len(soak.wakeups)
    for outcome in ("acted", "deferred", "ignored", "rejected"):
        assert soak.outcomes[outcome] > 0, f"the mix produced no {outcome} report"
    poison = [m for m in soak.sent if m.label == "poison"]
    assert poison
    assert all(m.dead_lettered and m.receive_count == 5 == len(m.errors) for m in poison)
    # Only a message unlucky enough to meet an AWS fault on five receives in a row may join them.
    assert len(unlucky(soak)) <= len(soak.sent) // 200
    server = soak.server
    assert server.created_claims and server.deleted_claims and server.evictions
    assert max(server.deleted_claims.values()) == 1
    assert max(server.evictions.values()) == 1
    assert soak.wakeups, "the follow-up wake-ups went through the queue too"
    answers = server.answers
    assert answers["429"] > 0 and answers["500"] > 0 and answers["503"] > 0
    assert soak.directory_throttled > 0 and soak.batch_errors > 0
    assert soak.duplicates_same_batch > 0 and soak.duplicates_later > 0
    by_id = {m.message_id: m for m in soak.sent}
    said_duplicate = sum(
        any("duplicate delivery" in r.reason for r in (m.reports or []) + (original.reports or []))
        for m in soak.sent
        if (original := by_id.get(m.duplicate_of or "")) is not None
    )
    assert said_duplicate > 0


def test_a_small_soak_with_more_trouble_loses_nothing_and_repeats_nothing() -> None:
    soak = run_soak(
        SoakConfig(
            events=300,
            nodes=60,
            duplicate_rate=0.1,
            pair_rate=0.1,
            kube_fault_rate=0.1,
            kube_timeout_rate=0.005,
            aws_fault_rate=0.1,
        )
    )
    _check_accounting(soak)
    assert sum(1 for m in soak.sent if m.duplicate_of) == 30
    assert soak.server.answers["dropped"] > 0, "no request timed out"
    assert soak.replacement_violations == []


@pytest.mark.bench
def test_soak_2000_events_nothing_lost_nothing_repeated() -> None:
    soak = run_soak(SoakConfig(events=2000, nodes=240))
    _check_accounting(soak)
    assert sum(1 for m in soak.sent if m.duplicate_of) == 100
    assert soak.server.answers["dropped"] > 0, "no request timed out"
    assert soak.ledger_throttled["before_action"] > 0
    assert soak.ledger_throttled["after_action"] > 0


@pytest.mark.bench
def test_soak_with_the_powertools_ledger_on_moto_dynamodb() -> None:
    """The real ``PowertoolsLedger`` (moto costs ~16 ms an entry, hence fewer events):
    PutItem, UpdateItem and DeleteItem throttled on some calls; an in-progress record left
    by a throttled UpdateItem expires with the (fake) invocation, before SQS redelivers."""
    soak = run_soak(SoakConfig(events=250, nodes=80, ledger="dynamodb", poison_nodes=1, seed=7))
    _check_accounting(soak)
    assert sum(soak.ledger_throttled.values()) > 0


@pytest.mark.bench
def test_soak_one_replacement_per_old_nodeclaim() -> None:
    """One old NodeClaim gets at most one replacement, across notices, deliveries, batches
    and concurrent handling: counted per old claim (the ``lifeboat.dev/replaces`` label of
    every NodeClaim the API server accepted), not per event. A soak weighted towards what
    provokes a second one: many pairs of different notices for one instance (Spot + state
    change, Spot + capacity reservation, Spot + rebalance, rebalance + scheduled change),
    mostly in one batch, and wake-ups delivered twice."""
    soak = run_soak(SoakConfig(events=600, nodes=300, pair_rate=0.5, wakeup_duplicate_rate=0.5))
    assert sum(1 for m in soak.sent if m.paired_with) == 300
    assert any(m.duplicate_of for m in soak.wakeups)
    assert soak.server.created_claims
    assert soak.replacement_violations == []
