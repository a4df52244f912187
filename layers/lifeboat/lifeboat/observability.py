"""What a batch's reports tell CloudWatch: structured logs and EMF metrics.

Kept out of the pipeline, which only returns reports; the handler hands them here.
Metric names match the dashboard of template.yaml.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Protocol

from lifeboat.report import Outcome, Report


class MetricSink(Protocol):
    def emit(self, name: str, value: float, unit: str, dimensions: dict[str, str]) -> None: ...


class PowertoolsMetricSink:
    """One EMF document per dimensioned metric (Powertools ``single_metric``)."""

    def __init__(self, namespace: str) -> None:
        self._namespace = namespace

    def emit(self, name: str, value: float, unit: str, dimensions: dict[str, str]) -> None:
        from aws_lambda_powertools.metrics import MetricUnit, single_metric

        with single_metric(
            name=name, unit=MetricUnit(unit), value=value, namespace=self._namespace
        ) as metric:
            for key, dim in dimensions.items():
                metric.add_dimension(name=key, value=dim)


def report_metrics(reports: Iterable[Report], sink: MetricSink, now: datetime) -> None:
    for report in reports:
        # A wake-up is Lifeboat's own follow-up, not a notice from AWS: counted apart, and
        # its (deliberately deferred) time is no reaction latency.
        if report.wakeup is not None:
            sink.emit("WakeupsHandled", 1, "Count", {"task": report.wakeup})
        else:
            sink.emit("NoticesReceived", 1, "Count", {"kind": report.kind})
        sink.emit("Outcomes", 1, "Count", {"outcome": str(report.outcome)})
        if report.unmanaged:
            sink.emit("UnmanagedInstances", 1, "Count", {"kind": report.kind})
        for action in report.actions:
            sink.emit("Actions", 1, "Count", {"action": str(action.get("type"))})
        if report.outcome is Outcome.ACTED and report.wakeup is None and report.event_time:
            latency_ms = max(0.0, (now - report.event_time).total_seconds() * 1000)
            sink.emit("ReactionLatency", latency_ms, "Milliseconds", {"kind": report.kind})


def log_fields(report: Report) -> dict[str, Any]:
    """The structured fields of one decision's log line (never a credential)."""
    fields = report.to_json()
    fields["unmanaged"] = report.unmanaged
    fields["wakeup"] = report.wakeup
    return fields
