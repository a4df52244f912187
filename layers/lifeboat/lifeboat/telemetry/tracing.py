"""X-Ray tracing through Powertools Tracer, loaded only for invocations X-Ray samples.

Importing the X-Ray SDK (which Powertools' ``Tracer()`` does at once) costs about a fifth of
a second, more than any other import of the function, and X-Ray records only a sample of
invocations (by default the first each second and 5 % of the rest). So the tracer is made on
the first invocation that Lambda marks ``Sampled=1`` in ``_X_AMZN_TRACE_ID``, and unsampled
invocations never pay for it. With SnapStart the tracer is made before the snapshot
(:meth:`LazyTracer.before_snapshot`), so a restored environment has it loaded at no cost.

Each report of a traced batch gets a subsegment annotated with ``kind``, ``cluster``,
``nodepool`` and ``outcome``, so the X-Ray console finds, for instance, every trace with
``annotation.kind = "spot-interruption" AND annotation.outcome = "acted"``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from lifeboat.model.report import Report

TRACE_HEADER = "_X_AMZN_TRACE_ID"
UNKNOWN = "none"


def sampled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether Lambda sampled the current invocation (``Sampled=1`` in its trace header)."""
    header = (os.environ if environ is None else environ).get(TRACE_HEADER, "")
    return any(part.strip() == "Sampled=1" for part in header.split(";"))


def disabled(environ: Mapping[str, str] | None = None) -> bool:
    """Tracing switched off (Powertools' own variable, which the tests set)."""
    env = os.environ if environ is None else environ
    return env.get("POWERTOOLS_TRACE_DISABLED", "").strip().lower() in ("1", "true", "yes")


class RecordTracer(Protocol):
    """What the handler needs of a tracer: one annotated subsegment per report."""

    def annotate(self, message_id: str, reports: Iterable[Report]) -> None: ...


class PowertoolsRecordTracer:
    """:class:`RecordTracer` over a Powertools ``Tracer``."""

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer

    def annotate(self, message_id: str, reports: Iterable[Report]) -> None:
        for report in reports:
            with self.tracer.provider.in_subsegment(f"## {report.kind}") as subsegment:
                subsegment.put_annotation("kind", report.kind)
                subsegment.put_annotation("cluster", report.cluster or UNKNOWN)
                subsegment.put_annotation("nodepool", report.nodepool or UNKNOWN)
                subsegment.put_annotation("outcome", str(report.outcome))
                subsegment.put_annotation("message_id", message_id)
                if report.instance_id:
                    subsegment.put_annotation("instance_id", report.instance_id)


class LazyTracer:
    """One Powertools ``Tracer`` per environment, made when first needed."""

    def __init__(self, service: str = "lifeboat") -> None:
        self._service = service
        self._tracer: Any = None
        self._lock = threading.Lock()

    def before_snapshot(self) -> None:
        """Make the tracer now, so restored environments have it
        (``lifeboat.runtime.snapstart``)."""
        if not disabled():
            self._get()

    def after_restore(self) -> None:
        """Nothing to renew: the tracer holds no credential, token or random state."""

    def for_invocation(self) -> PowertoolsRecordTracer | None:
        """The tracer if this invocation is sampled, else None (nothing is imported)."""
        if disabled() or not sampled():
            return None
        return PowertoolsRecordTracer(self._get())

    def traced(
        self, handler: Callable[[dict[str, Any], Any], dict[str, Any]], tracer: Any
    ) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
        """``handler`` wrapped in Powertools' ``capture_lambda_handler`` (cold start and
        service annotations, errors as metadata; the response is not recorded)."""

        def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
            return handler(event, context)  # named so the subsegment is "## lambda_handler"

        wrapped: Callable[[dict[str, Any], Any], dict[str, Any]] = (
            tracer.tracer.capture_lambda_handler(lambda_handler, capture_response=False)
        )
        return wrapped

    def _get(self) -> Any:
        with self._lock:
            if self._tracer is None:
                from aws_lambda_powertools import Tracer

                # botocore (AWS calls) and httplib (the Kubernetes requests, made through
                # urllib3) become subsegments; nothing else the function uses is traced.
                self._tracer = Tracer(service=self._service, patch_modules=["botocore", "httplib"])
            return self._tracer
