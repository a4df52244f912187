"""The soak's audit: every message accounted for, and no action done twice, judged by what
the API server accepted (its request log and its final state), not by what Lifeboat says.

The strictest check is per old NodeClaim: one old claim gets at most one replacement,
however many notices name its instance, however often each is delivered, in however many
batches and invocations. Replacements are recognised by their ``lifeboat.dev/replaces``
label, whatever they are named.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubemu import Emulator
from lifeboat.kube import nodes
from lifeboat.marks import node_marks
from lifeboat.model.report import Outcome, Report

from .messages import Sent

Obj = dict[str, Any]


@dataclass
class ServerLog:
    """What the API server did: successful writes (from its request log and final state)
    and every answer it gave, injected faults included."""

    created_claims: list[Obj] = field(default_factory=list)
    claim_creates: int = 0  # successful NodeClaim creates in the request log
    deleted_claims: Counter[str] = field(default_factory=Counter)
    evictions: Counter[str] = field(default_factory=Counter)
    node_patches: int = 0
    answers: Counter[str] = field(default_factory=Counter)


def read_server(emulator: Emulator, original_claims: Iterable[str]) -> ServerLog:
    log = ServerLog(answers=emulator.answers)
    for (verb, group, resource, namespace, name), (_, answered) in emulator.timed_request_log():
        if answered is None:  # refused, failed or dropped: nothing was done
            continue
        if (verb, group, resource) == ("create", "karpenter.sh", "nodeclaims"):
            log.claim_creates += 1
        elif (verb, group, resource) == ("delete", "karpenter.sh", "nodeclaims"):
            log.deleted_claims[name] += 1
        elif (verb, resource) == ("create", "pods/eviction"):
            log.evictions[f"{namespace}/{name}"] += 1
        elif (verb, resource) == ("patch", "nodes"):
            log.node_patches += 1
    before = set(original_claims)
    log.created_claims = [
        claim for claim in emulator.objects("NodeClaim") if nodes.name_of(claim) not in before
    ]
    return log


def replacements_by_old_claim(server: ServerLog) -> Counter[str]:
    return Counter(
        nodes.labels_of(claim).get(node_marks.REPLACES_LABEL, "?")
        for claim in server.created_claims
    )


def audit_replacements(server: ServerLog) -> list[str]:
    """One old NodeClaim, at most one replacement (issue 10.1)."""
    problems = [
        f"NodeClaim {nodes.name_of(claim)} created without {node_marks.REPLACES_LABEL}"
        for claim in server.created_claims
        if node_marks.REPLACES_LABEL not in nodes.labels_of(claim)
    ]
    if server.claim_creates != len(server.created_claims):
        problems.append(
            f"{server.claim_creates} NodeClaims created but {len(server.created_claims)} "
            "new ones in the cluster at the end"
        )
    problems += [
        f"{count} replacement NodeClaims for old NodeClaim {old}"
        for old, count in sorted(replacements_by_old_claim(server).items())
        if count > 1
    ]
    return problems


def audit(
    sent: Sequence[Sent],
    wakeups: Sequence[Sent],
    server: ServerLog,
    final_nodes: Sequence[Mapping[str, Any]],
) -> list[str]:
    """No other action repeated, and no silent failure."""
    problems = [
        f"NodeClaim {k} deleted {n} times" for k, n in server.deleted_claims.items() if n > 1
    ]
    problems += [f"pod {k} evicted {n} times" for k, n in server.evictions.items() if n > 1]
    for node in final_nodes:
        keys = [str(t.get("key")) for t in nodes.taints(node)]
        repeated = sorted(k for k, n in Counter(keys).items() if n > 1)
        if repeated:
            problems.append(f"node {nodes.name_of(node)} carries taints {repeated} more than once")
    # Acted once: per (event, instance), one delivery's reports say what was done; the other
    # deliveries of the same event say "duplicate". A rejection acts on nothing and is never
    # remembered (a forgery must not make the genuine event a duplicate: issue 23.5), so each
    # delivery of a rejected message is rejected again: not a second handling.
    reporting: defaultdict[str, list[str]] = defaultdict(list)
    for message in sent:
        for report in message.reports or []:
            if str(report.outcome) == "rejected":
                continue
            if report.instance_id and report.event_id and not _handled_before(report):
                reporting[f"{report.event_id}#{report.instance_id}"].append(message.message_id)
    problems += [
        f"(event, instance) {k} handled by {len(v)} deliveries"
        for k, v in reporting.items()
        if len(v) > 1
    ]
    # A dead-lettered message failed on every receive, each time for a recorded reason: never
    # a silent failure. (An ordinary one can be unlucky: several 2.5 % AWS faults in a row.)
    for message in [*sent, *wakeups]:
        if message.dead_lettered and len(message.errors) != message.receive_count:
            problems.append(
                f"message {message.message_id} ({message.label}) dead-lettered after "
                f"{message.receive_count} receives but {len(message.errors)} errors"
            )
    return problems


def _handled_before(report: Report) -> bool:
    """A report saying another delivery (or this message's failed receipt) did the work."""
    return "duplicate delivery" in report.reason or report.reason.startswith("continuing: ")


def fates(messages: Iterable[Sent]) -> tuple[Counter[str], Counter[str], list[str]]:
    """(report outcomes, message fates, problems): every message dead-lettered or deleted
    with at least one report, each with a reason."""
    outcomes: Counter[str] = Counter()
    by_fate: Counter[str] = Counter()
    problems: list[str] = []
    for message in messages:
        if message.dead_lettered:
            by_fate["dead-lettered"] += 1
            continue
        if message.reports is None:
            problems.append(f"LOST: message {message.message_id} ({message.label}) has no fate")
            by_fate["lost"] += 1
            continue
        if not message.reports:
            problems.append(
                f"message {message.message_id} ({message.label}) deleted with no report"
            )
        for report in message.reports:
            outcomes[str(report.outcome)] += 1
            if not report.reason.strip():
                problems.append(f"message {message.message_id}: {report.outcome} without a reason")
        kinds = sorted({str(r.outcome) for r in message.reports})
        by_fate["+".join(kinds) or "none"] += 1
    return outcomes, by_fate, problems


def check_expectations(sent: Sequence[Sent]) -> list[str]:
    """What each generated message must become, whatever the faults."""
    problems: list[str] = []
    twinned = {m.duplicate_of for m in sent if m.duplicate_of}
    twinned |= {m.message_id for m in sent if m.duplicate_of}
    for message in sent:
        if message.reports is None:
            continue
        outcomes = {r.outcome for r in message.reports}
        # (A duplicate of a rejected message may also say "duplicate delivery".)
        # Either copy of a duplicated message may be the one handled second.
        duplicate_ignored = message.message_id in twinned and outcomes == {Outcome.IGNORED}
        rejectable = message.label in ("malformed", "foreign")
        if rejectable and outcomes != {Outcome.REJECTED} and not duplicate_ignored:
            problems.append(f"{message.label} message {message.message_id} ended {outcomes}")
        if message.label == "poison" and not message.dead_lettered:
            problems.append(
                f"poison message {message.message_id} ended {outcomes}, not dead-lettered"
            )
        if message.label == "unsupported" and outcomes != {Outcome.IGNORED}:
            problems.append(f"unsupported message {message.message_id} ended {outcomes}")
    return problems
