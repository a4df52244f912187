"""Lambda entry point: wiring only, around ``lifeboat.runtime.handler.handle_batch``.

Nothing here decides anything. The service (clients, EKS endpoint and token caches) is built
at import, during the init phase, so that with SnapStart it is part of the snapshot; a
setting that cannot apply does not fail the init (where it is hard to see) but every
invocation, with the variable named. What a batch does not always use is not paid for here:
the X-Ray SDK loads on the first sampled invocation (``lifeboat.telemetry.tracing``), the clients of
Scheduler, Auto Scaling, SQS and EventBridge on first use, the ``kubernetes`` package
without its kubeconfig and watch machinery (``lifeboat.runtime.coldstart``), and of the
layer only what a Spot warning crosses: every other kind's parser comes with its kind's first
message (``lifeboat.events.registry``), the sweep's reader with the first sweep, the wake-ups'
handler with the first wake-up, the rotation with its first command.
"""

from __future__ import annotations

from lifeboat.runtime.coldstart import import_kubernetes_client_only

import_kubernetes_client_only()  # before anything imports kubernetes.client

import os
from typing import Any

from aws_lambda_powertools import Logger

from lifeboat.runtime import snapstart
from lifeboat.runtime.handler import handle_batch
from lifeboat.runtime.service import Service, build_service
from lifeboat.telemetry.observability import PowertoolsBatchMetrics, quiet_third_party_loggers
from lifeboat.telemetry.tracing import LazyTracer

quiet_third_party_loggers()  # botocore's DEBUG lines carry the role's session token
logger = Logger(service="lifeboat")
metrics = PowertoolsBatchMetrics(os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Lifeboat"))
tracing = LazyTracer(service="lifeboat")


def _start() -> tuple[Service | None, Exception | None]:
    try:
        return build_service(), None
    except Exception as error:  # raised again by every invocation, see lambda_handler
        logger.exception("Lifeboat cannot start")
        return None, error


service, startup_error = _start()
if service is not None:
    snapstart.install(service, metrics, tracing)


def _handle(event: dict[str, Any], context: Any, tracer: Any = None) -> dict[str, Any]:
    if service is None:
        assert startup_error is not None
        raise startup_error
    ledger = service.pipeline.ledger
    if ledger is not None and hasattr(ledger, "register_lambda_context"):
        ledger.register_lambda_context(context)
    return handle_batch(
        event,
        context,
        service.pipeline,
        metrics=metrics,
        logger=logger,
        tracer=tracer,
        notifier=service.notifier,
        redelivery=service.redelivery,
    )


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    tracer = tracing.for_invocation()
    if tracer is None:
        return _handle(event, context)
    return tracing.traced(lambda e, c: _handle(e, c, tracer), tracer)(event, context)
