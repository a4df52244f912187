"""``python -m bench.health_split``: one AWS Health event naming 500 instances, against the
function's 60 s timeout (issue 10.9).

A scheduled change naming ``--instances`` Karpenter nodes (spread over 20 NodePools with
their 20 % budgets) goes through ``handle_batch`` as the Lambda runs it, on the Kubernetes
API emulator with ``--latency-ms`` per request (10 ms, as ``python -m bench``):

1. ``unsplit``: the whole event in one message (``notices_per_message=None``, what the
   function did before the split): the time of that one invocation;
2. ``split``: as deployed (``lifeboat.flow.split.NOTICES_PER_MESSAGE``): the event's message,
   then its remainders (taken from the wake-up sink, as Scheduler would deliver them) in
   SQS batches of 10 handled side by side by ``BATCH_WORKERS`` threads, as one invocation
   receives them. Reported: the longest invocation, and that time as a ratio of the 60 s
   timeout; the instances per message; and whether every instance was judged exactly once.

``--json FILE`` writes the numbers. The timings depend on the machine's load: the summary
says how busy it was.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.cluster import build_cluster
from bench.events import scheduled_change, sqs_record
from bench.harness import Bench, Endpoints, LambdaContext
from bench.scenarios import NullMetrics
from kubemu import Emulator
from lifeboat.flow.pipeline import Pipeline
from lifeboat.flow.split import NOTICES_PER_MESSAGE
from lifeboat.runtime.handler import handle_batch
from lifeboat.wakeup.codec import encode

FUNCTION_TIMEOUT_S = 60.0  # template.yaml, InterruptionFunction.Timeout
SQS_BATCH = 10  # template.yaml, BatchSize default


class Decisions:
    """A logger for ``handle_batch`` that keeps each decision's instance and outcome."""

    def __init__(self) -> None:
        self.judged: Counter[str] = Counter()  # instance -> decisions other than duplicates
        self.outcomes: Counter[str] = Counter()
        self.per_message: Counter[str] = Counter()
        self.errors: list[str] = []

    def log(self, level: int, message: str, *args: Any, extra: Any = None, **_: Any) -> None:
        fields = (extra or {}).get("decision")
        if fields is None:
            return
        self.outcomes[str(fields["outcome"])] += 1
        if "duplicate" in str(fields.get("reason")):
            return
        self.judged[str(fields["instance_id"])] += 1
        self.per_message[str((extra or {}).get("message_id"))] += 1

    def error(self, message: str, *args: Any, extra: Any = None, **_: Any) -> None:
        self.errors.append(str((extra or {}).get("error", message)))

    def info(self, *args: Any, **kwargs: Any) -> None:
        pass

    warning = debug = info


def health_event(instance_ids: list[str], template: dict[str, Any]) -> dict[str, Any]:
    """One scheduled change naming every instance of ``instance_ids``."""
    event: dict[str, Any] = json.loads(json.dumps(template))
    entity = event["detail"]["affectedEntities"][0]
    event["resources"] = list(instance_ids)
    event["detail"]["affectedEntities"] = [{**entity, "entityValue": i} for i in instance_ids]
    return event


def _invoke(pipeline: Pipeline, records: list[dict[str, Any]], log: Decisions) -> float:
    started = time.perf_counter()
    response = handle_batch(
        {"Records": records}, LambdaContext(), pipeline, metrics=NullMetrics(), logger=log
    )
    elapsed = time.perf_counter() - started
    if response["batchItemFailures"]:
        raise RuntimeError(f"records failed: {response['batchItemFailures']} {log.errors[:3]}")
    return elapsed


def run(instances: int, latency_ms: float, limit: int | None, unsplit: bool) -> dict[str, Any]:
    cluster = build_cluster(instances + 10, pools=20, pods_per_node=3)
    machines = cluster.karpenter[:instances]
    event = health_event([m.instance_id for m in machines], scheduled_change(machines[0]))
    results: dict[str, Any] = {
        "instances": len(machines),
        "latency_ms": latency_ms,
        "function_timeout_s": FUNCTION_TIMEOUT_S,
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    with Emulator(cluster.objects, latency=latency_ms / 1000) as emu:
        bench = Bench(cluster, emu, Endpoints("static", "memory"))
        if unsplit:
            bench.restore()
            log = Decisions()
            pipeline = replace(bench.pipeline(), notices_per_message=None)
            seconds = _invoke(pipeline, [sqs_record(event)], log)
            results["unsplit"] = {
                "largest_message_s": round(seconds, 2),
                "ratio_to_timeout": round(seconds / FUNCTION_TIMEOUT_S, 3),
                "instances_judged": len(log.judged),
                "outcomes": dict(log.outcomes),
            }
            print(f"unsplit: one message, {seconds:.1f} s", file=sys.stderr)
        bench.restore()
        bench.wakeups.pending.clear()
        log = Decisions()
        pipeline = replace(bench.pipeline(), notices_per_message=limit)
        invocations = [_invoke(pipeline, [sqs_record(event)], log)]
        remainders = [w for w in bench.wakeups.pending.values() if w.instances]
        for start in range(0, len(remainders), SQS_BATCH):
            chunk = remainders[start : start + SQS_BATCH]
            invocations.append(_invoke(pipeline, [sqs_record(encode(w)) for w in chunk], log))
        largest = max(invocations)
        results["split"] = {
            "notices_per_message": limit,
            "messages": 1 + len(remainders),
            "invocations": len(invocations),
            "invocation_s": [round(s, 2) for s in invocations],
            "largest_invocation_s": round(largest, 2),
            "ratio_to_timeout": round(largest / FUNCTION_TIMEOUT_S, 3),
            "most_instances_in_a_message": max(log.per_message.values()),
            "instances_judged": len(log.judged),
            "judged_exactly_once": all(n == 1 for n in log.judged.values())
            and len(log.judged) == len(machines),
            "outcomes": dict(log.outcomes),
        }
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=500)
    parser.add_argument("--latency-ms", type=float, default=10.0)
    parser.add_argument("--limit", type=int, default=NOTICES_PER_MESSAGE)
    parser.add_argument("--no-unsplit", action="store_true", help="skip the one-message run")
    parser.add_argument("--json", metavar="FILE", help="also write the numbers here")
    args = parser.parse_args(argv)
    results = run(args.instances, args.latency_ms, args.limit, not args.no_unsplit)
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
