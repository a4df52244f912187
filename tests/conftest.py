"""Fixtures shared by every test: the Kubernetes emulator, moto, a Lambda context, a metric
sink. The builders and doubles behind them are in ``tests.support``."""

from __future__ import annotations

import functools
import importlib
import json
import os
import pkgutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import botocore.loaders
import botocore.session
import pytest
from moto import mock_aws

from kubemu import Emulator
from kubemu.server import EmulatorHTTPServer
from tests.support.aws import AwsCredentials
from tests.support.events import REGION
from tests.support.fakes import LambdaContext, RecordingMetrics

# Every botocore session of the test process shares one loader: the service models (EC2's
# is a 5 MB JSON file) are read once per process instead of once per boto3.Session, which
# the code under test makes per cluster or command. The loader only caches files read from
# botocore's own data; nothing a test does is shared through it.
botocore.session.create_loader = functools.cache(botocore.loaders.create_loader)
# moto's ~2,700 built-in images, made again at every start and reset of its EC2 (seconds per
# test, whether or not it launches anything): tests launch from tests.support.aws.ANY_AMI or
# register the image they read.
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")


# Suites that check the template, the emulator, the docs site and the project's own rules:
# they run no layer code worth measuring, and coverage's tracer (Python 3.11's is a C trace
# function, called on every line of every frame, measured or not) made them 60 % slower.
UNMEASURED = (
    "unit/template",
    "unit/kubemu",
    "integration/kubemu",
    "unit/docsite",
    "integration/docsite",
    "unit/project",
)
TESTS = Path(__file__).parent


def _coverage(config: pytest.Config) -> Any:
    """pytest-cov's controller when ``--cov`` measures this process, else None."""
    plugin = config.pluginmanager.getplugin("_cov")
    return getattr(plugin, "cov_controller", None) if plugin is not None else None


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    """Collection without coverage's tracer: every module of the layer is imported first,
    measured (its definitions are lines run at import), then the tracer is paused while the
    test modules and their libraries (moto, hypothesis, cfn-lint, kubernetes) are imported
    and rewritten by pytest: they hold no layer line, and tracing them cost a third of
    each worker's collection."""
    controller = _coverage(session.config)
    if controller is None:
        yield
        return
    import lifeboat

    for module in pkgutil.walk_packages(lifeboat.__path__, "lifeboat."):
        importlib.import_module(module.name)
    controller.pause()
    try:
        yield
    finally:
        controller.resume()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The UNMEASURED suites run without coverage's tracer (pytest-cov's ``no_cover``)."""
    for item in items:
        inside = item.path.is_relative_to(TESTS)
        if inside and item.path.relative_to(TESTS).as_posix().startswith(UNMEASURED):
            item.add_marker(pytest.mark.no_cover)


@pytest.fixture(scope="session", autouse=True)
def _emulator_untraced(pytestconfig: pytest.Config) -> Iterator[None]:
    """The emulator's request threads run without coverage's tracer (coverage starts it in
    every new thread): they run the emulator, never the layer, which the test's own thread
    calls as a client; traced, the API server's work cost the integration tests 60 % more."""
    if _coverage(pytestconfig) is None:
        yield
        return
    serve = EmulatorHTTPServer.process_request_thread

    def untraced(self: EmulatorHTTPServer, request: Any, client_address: Any) -> None:
        sys.settrace(None)
        serve(self, request, client_address)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(EmulatorHTTPServer, "process_request_thread", untraced)
        yield


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    """An empty Kubernetes API emulator, started on 127.0.0.1 and stopped after the test."""
    with Emulator() as emu:
        yield emu


@pytest.fixture
def aws_region() -> str:
    """The region of the ``aws`` fixture; a module overrides it by defining its own."""
    return REGION


@pytest.fixture
def aws_credentials() -> AwsCredentials:
    """The credentials of the ``aws`` fixture; a module overrides it to recognise them."""
    return AwsCredentials()


@pytest.fixture
def aws(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    aws_region: str,
    aws_credentials: AwsCredentials,
) -> Iterator[boto3.Session]:
    """Every AWS service in-process on moto (``mock_aws``), with dummy credentials in the
    environment and none of the developer's own configuration read; yields a session in
    ``aws_region``. Nothing leaves the process."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": aws_credentials.access_key_id,
        "AWS_SECRET_ACCESS_KEY": aws_credentials.secret_access_key,
        "AWS_SECURITY_TOKEN": aws_credentials.session_token,
        "AWS_SESSION_TOKEN": aws_credentials.session_token,
        "AWS_DEFAULT_REGION": aws_region,
        "AWS_REGION": aws_region,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
    }.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        yield boto3.Session(region_name=aws_region)


@pytest.fixture
def lambda_context() -> LambdaContext:
    return LambdaContext()


@pytest.fixture
def metrics() -> RecordingMetrics:
    return RecordingMetrics()


@dataclass
class CliRun:
    code: int
    out: str
    err: str

    @property
    def records(self) -> list[dict[str, Any]]:
        """The JSON lines printed (``--json``)."""
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliRun]:
    """Runs ``lifeboat`` through ``lifeboat_local.cli.main`` and captures what it prints
    (the commands write to the ``sys.stdout`` of call time, which the capture replaced)."""
    from lifeboat_local.cli import main

    def run(*argv: str | Path) -> CliRun:
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit_:  # argparse's usage errors
            code = int(exit_.code or 0)
        captured = capsys.readouterr()
        return CliRun(code, captured.out, captured.err)

    return run
