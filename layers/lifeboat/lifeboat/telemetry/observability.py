"""What a batch's reports tell CloudWatch: structured logs and EMF metrics.

Kept out of the pipeline, which only returns reports; the handler hands them here.
Metric names and dimensions match the dashboard and alarms of template.yaml.

Metrics are written once per batch (:class:`PowertoolsBatchMetrics`), through Powertools
Metrics' EMF serialiser. EMF holds one value per dimension in a document, so a batch writes
one document per distinct (cluster, nodepool, kind, outcome) among its reports: one for a
batch of like notices. Each document publishes its metrics under several dimension sets, so
an operator can split by any of them or see the whole fleet: the full four, (kind, outcome),
(outcome) and (cluster). What belongs to the batch as a whole (records that failed,
notifications that could not be published, the cold start) goes in one more document,
written only when one of those is not zero.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from lifeboat.model.report import Outcome, Report

# The split every per-report metric carries ("none" where a report has no value).
DIMENSIONS = ("cluster", "nodepool", "kind", "outcome")
# Roll-ups published from the same document (Powertools adds "service" to each).
DIMENSION_SETS = (DIMENSIONS, ("kind", "outcome"), ("outcome",), ("cluster",))
UNKNOWN = "none"
# Values of one metric in one EMF document (CloudWatch's limit; Powertools flushes at it).
MAX_VALUES = 99

# One metric per kind of action, so a dashboard reads "replacements created" directly.
ACTION_METRICS = {
    "taint": "NodesTainted",
    "cordon": "NodesCordoned",
    "label": "NodesExcludedFromLoadBalancers",
    "create-nodeclaim": "NodeClaimsCreated",
    "delete-nodeclaim": "NodeClaimsDeleted",
    "evict": "PodsEvicted",
    "complete-lifecycle-action": "LifecycleActionsCompleted",
}
OTHER_ACTIONS = "OtherActions"

# Libraries whose DEBUG output carries credentials: botocore logs the signed request (the
# role's session token among its headers), urllib3 and the kubernetes client the request
# lines and headers (the EKS bearer token). Lambda's DEBUG application log level reaches
# them through the root logger; they are held at INFO whatever it is.
THIRD_PARTY_LOGGERS = ("boto3", "botocore", "s3transfer", "urllib3", "kubernetes", "aws_xray_sdk")


def quiet_third_party_loggers(level: int = logging.INFO) -> None:
    """Keep :data:`THIRD_PARTY_LOGGERS` out of DEBUG (a higher level set on them stays)."""
    for name in THIRD_PARTY_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET or logger.level < level:
            logger.setLevel(level)


class MetricSink(Protocol):
    """Receives one observation; ``dimensions`` empty means the function as a whole."""

    def emit(self, name: str, value: float, unit: str, dimensions: dict[str, str]) -> None: ...


@runtime_checkable
class BatchMetricSink(MetricSink, Protocol):
    """A sink that holds a batch's observations and writes them when it is flushed."""

    def flush(self) -> int: ...


def report_dimensions(report: Report) -> dict[str, str]:
    return {
        "cluster": report.cluster or UNKNOWN,
        "nodepool": report.nodepool or UNKNOWN,
        "kind": report.kind,
        "outcome": str(report.outcome),
    }


def report_metrics(reports: Iterable[Report], sink: MetricSink, now: datetime) -> None:
    for report in reports:
        dimensions = report_dimensions(report)
        sink.emit("Outcomes", 1, "Count", dimensions)
        # A wake-up is Lifeboat's own follow-up, not a notice from AWS: counted apart, and
        # its (deliberately deferred) time is no reaction latency.
        if report.wakeup is not None:
            sink.emit("WakeupsHandled", 1, "Count", dimensions)
        if report.unmanaged:
            sink.emit("UnmanagedInstances", 1, "Count", dimensions)
        if report.forced:
            sink.emit("ForcedActions", 1, "Count", dimensions)
        if report.gave_up:
            sink.emit("GiveUps", 1, "Count", dimensions)
        for action in report.actions:
            name = ACTION_METRICS.get(str(action.get("type")), OTHER_ACTIONS)
            sink.emit(name, 1, "Count", dimensions)
        if report.outcome is Outcome.ACTED and report.wakeup is None and report.event_time:
            latency_ms = max(0.0, (now - report.event_time).total_seconds() * 1000)
            sink.emit("ReactionLatency", latency_ms, "Milliseconds", dimensions)


class PowertoolsBatchMetrics:
    """Collects a batch's observations; :meth:`flush` writes them as EMF documents.

    ``out`` receives each document as one line of JSON (stdout, where Lambda's log agent
    extracts EMF). Safe to share between threads; one Lambda environment runs one batch at
    a time, so a flush holds exactly one batch.
    """

    def __init__(
        self, namespace: str, service: str = "lifeboat", out: Callable[[str], None] = print
    ) -> None:
        self._namespace = namespace
        self._service = service
        self._out = out
        self._pending: list[tuple[str, float, str, dict[str, str]]] = []
        self._cold_start = True
        self._lock = threading.Lock()

    def emit(self, name: str, value: float, unit: str, dimensions: dict[str, str]) -> None:
        with self._lock:
            self._pending.append((name, value, unit, dict(dimensions)))

    def before_snapshot(self) -> None:
        """Nothing to prepare (``lifeboat.runtime.snapstart``)."""

    def after_restore(self) -> None:
        """The next batch is the first of a restored environment: a cold start too."""
        with self._lock:
            self._cold_start = True

    def flush(self) -> int:
        """Write what was emitted since the last flush; returns the number of documents."""
        with self._lock:
            pending, self._pending = self._pending, []
            if self._cold_start:
                pending.append(("ColdStart", 1, "Count", {}))
                self._cold_start = False
        groups: dict[tuple[tuple[str, str], ...], list[tuple[str, float, str]]] = {}
        for name, value, unit, dimensions in pending:
            key = tuple(sorted(dimensions.items()))
            groups.setdefault(key, []).append((name, value, unit))
        written = 0
        for key, observations in groups.items():
            for document in self._documents(dict(key), observations):
                self._out(json.dumps(document, separators=(",", ":")))
                written += 1
        return written

    def _documents(
        self, dimensions: Mapping[str, str], observations: list[tuple[str, float, str]]
    ) -> list[dict[str, Any]]:
        """Counts are summed; other values (latencies) stay apart so CloudWatch computes
        their percentiles, at most :data:`MAX_VALUES` a metric per document (EMF's limit)."""
        totals: dict[tuple[str, str], float] = {}
        values: dict[tuple[str, str], list[float]] = {}
        for name, value, unit in observations:
            if unit == "Count":
                totals[(name, unit)] = totals.get((name, unit), 0.0) + value
            else:
                values.setdefault((name, unit), []).append(value)
        longest = max((len(v) for v in values.values()), default=0)
        documents = []
        for start in range(0, max(longest, 1), MAX_VALUES):
            metrics = self._metrics(dimensions)
            if start == 0:
                for (name, unit), total in totals.items():
                    metrics.add_metric(name=name, unit=unit, value=total)
            for (name, unit), chunk in values.items():
                for value in chunk[start : start + MAX_VALUES]:
                    metrics.add_metric(name=name, unit=unit, value=value)
            documents.append(dict(metrics.serialize_metric_set()))
        return documents

    def _metrics(self, dimensions: Mapping[str, str]) -> Any:
        from aws_lambda_powertools.metrics import EphemeralMetrics

        metrics = EphemeralMetrics(namespace=self._namespace, service=self._service)
        if dimensions:
            first, *rollups = DIMENSION_SETS
            for name in first:
                metrics.add_dimension(name=name, value=dimensions[name])
            for names in rollups:
                metrics.add_dimensions(
                    service=self._service, **{name: dimensions[name] for name in names}
                )
        return metrics


def log_fields(report: Report) -> dict[str, Any]:
    """The structured fields of one decision's log line (never a credential)."""
    fields = report.to_json()
    fields["unmanaged"] = report.unmanaged
    fields["wakeup"] = report.wakeup
    fields["cluster"] = report.cluster
    fields["forced"] = report.forced
    fields["gave_up"] = report.gave_up
    return fields
