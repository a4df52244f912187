"""Lambda entry point: Powertools wiring around ``lifeboat.handler.handle_batch``.

Nothing here decides anything. The pipeline is built on the first invocation and kept for
the container's life (clients, EKS endpoint and token caches); building it at import time
would bill its cost to every cold start even of a container that then fails its settings.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger, Tracer
from aws_lambda_powertools.utilities.typing import LambdaContext

from lifeboat.handler import handle_batch
from lifeboat.observability import PowertoolsMetricSink
from lifeboat.service import Service, build_service

logger = Logger(service="lifeboat")
tracer = Tracer(service="lifeboat")
_metrics = PowertoolsMetricSink(os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "Lifeboat"))
_service: Service | None = None


def service() -> Service:
    global _service
    if _service is None:
        _service = build_service()
    return _service


@logger.inject_lambda_context(correlation_id_path="Records[0].messageId")
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    built = service()
    ledger = built.pipeline.ledger
    if ledger is not None and hasattr(ledger, "register_lambda_context"):
        ledger.register_lambda_context(context)
    return handle_batch(event, context, built.pipeline, metrics=_metrics, logger=logger)
