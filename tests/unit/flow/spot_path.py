"""The layer's modules a Spot warning crosses, from ``functions/interruption/app.py`` to the
first node PATCH: the Lambda entry point loaded as ``tests/unit/test_handler.py`` loads it
(``build_service`` answering a pipeline on the Kubernetes emulator, as there), the SQS sample of a
Spot warning handed to ``lambda_handler``, and every call into a module of the layer
recorded (``sys.setprofile``) until ``KubeApi.request`` is entered with ``PATCH``.

Run as a script (``python -m tests.unit.flow.spot_path``) it prints the path as JSON: a
fresh interpreter, so no cache another test warmed shortens it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType
from typing import Any

APP = "lifeboat_interruption_app_under_test"
# The clock of tests/unit/test_handler.py: three minutes after the Spot sample's warning.
NOW = datetime(2026, 12, 1, 14, 5, tzinfo=UTC)


@dataclass
class Path:
    """The modules entered, in order: ``crossed`` each once (first entry), ``steps`` every
    move from one module into another (a module re-entered counts again)."""

    crossed: list[str] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)
    patched: bool = False

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.patched or event != "call" or frame.f_code.co_name == "<module>":
            return
        name = str(frame.f_globals.get("__name__", ""))
        if name == APP:
            name = "functions/interruption/app.py"
        elif not name.startswith("lifeboat."):
            return
        if not self.steps or self.steps[-1] != name:
            self.steps.append(name)
        if name not in self.crossed:
            self.crossed.append(name)
        if (
            name == "lifeboat.kube.transport"
            and frame.f_code.co_name == "request"
            and frame.f_locals.get("method") == "PATCH"
        ):
            self.patched = True


def trace() -> Path:
    """Replay the Spot sample through the Lambda entry point; the path up to the first PATCH.
    The pipeline is the one ``tests/unit/test_handler.py`` builds (the Lambda's, on the
    emulator), without reading template.yaml: its settings change no module on the path."""
    import lifeboat.runtime.service
    from kubemu import Emulator, load_cluster_file
    from lifeboat.flow.pipeline import OneCluster, Pipeline
    from lifeboat.kube.client import KubeApi, RetryPolicy
    from lifeboat.model.ledger import MemoryLedger
    from lifeboat.model.settings import load_settings
    from lifeboat.runtime.service import Service
    from lifeboat_local.directory import directory_from_objects
    from tests.support.fakes import LambdaContext
    from tests.support.paths import EVENTS, ROOT

    env = {
        "LIFEBOAT_CLUSTERS": "prod",
        "LIFEBOAT_DRY_RUN": "false",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_REGION": "us-east-1",
    }
    os.environ.update(env)
    objects = load_cluster_file(EVENTS / "cluster.yaml")
    path = Path()
    with Emulator(objects) as emulator:
        settings = load_settings(env)
        pipeline = Pipeline(
            clusters=OneCluster(KubeApi(emulator.api_client(), RetryPolicy(attempts=2))),
            directory=directory_from_objects(objects, cluster="prod"),
            settings=settings,
            clock=lambda: NOW,
            ledger=MemoryLedger(),
        )
        service = Service(pipeline, settings)

        def build_service(env: object = None) -> Service:
            return service

        lifeboat.runtime.service.build_service = build_service  # type: ignore[assignment]
        spec = importlib.util.spec_from_file_location(
            APP, ROOT / "functions" / "interruption" / "app.py"
        )
        assert spec is not None and spec.loader is not None
        app = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(app)
        event = json.loads((EVENTS / "sqs" / "spot-interruption.json").read_text())
        sys.setprofile(path.profile)
        try:
            response = app.lambda_handler(event, LambdaContext())
        finally:
            sys.setprofile(None)
    assert response == {"batchItemFailures": []}, response
    assert path.patched, "the Spot warning made no PATCH"
    return path


if __name__ == "__main__":
    found = trace()
    print(json.dumps({"crossed": found.crossed, "steps": found.steps}))
