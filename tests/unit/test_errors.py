"""``lifeboat.errors``: one hierarchy for every exception the Lambda's code defines, and no
``assert`` as a run-time check in it (``python -O`` strips them; a broken invariant raises
``BrokenInvariant`` instead)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import lifeboat
from lifeboat.errors import (
    BrokenInvariant,
    ClusterError,
    Gone,
    InvalidInput,
    LifeboatError,
    RetryLater,
)

LAYER = Path(lifeboat.__file__).parent
KINDS = (InvalidInput, RetryLater, ClusterError, Gone, BrokenInvariant)


_LIST_EXCEPTIONS = """
import importlib, inspect, pkgutil, lifeboat
for info in pkgutil.walk_packages(lifeboat.__path__, "lifeboat."):
    module = importlib.import_module(info.name)
    for _, value in inspect.getmembers(module, inspect.isclass):
        if issubclass(value, BaseException) and value.__module__ == info.name:
            print(f"{info.name}:{value.__qualname__}")
"""


def _defined_exceptions() -> list[type[BaseException]]:
    """Every exception class defined in the layer. Its modules are imported in a process of
    their own: importing them all here would change what other tests of this process see
    loaded (the cold-start tests count modules)."""
    listed = subprocess.run(
        [sys.executable, "-c", _LIST_EXCEPTIONS], capture_output=True, text=True, check=True
    ).stdout.split()
    found: list[type[BaseException]] = []
    for entry in listed:
        module, _, name = entry.partition(":")
        found.append(getattr(importlib.import_module(module), name))
    return found


def test_every_exception_lifeboat_defines_is_a_lifeboat_error_of_one_kind() -> None:
    defined = _defined_exceptions()
    assert len(defined) >= 15
    outside = [
        f"{c.__module__}.{c.__qualname__}" for c in defined if not issubclass(c, LifeboatError)
    ]
    assert outside == []
    kindless = [
        f"{c.__module__}.{c.__qualname__}"
        for c in defined
        if c not in (LifeboatError, *KINDS) and not issubclass(c, KINDS)
    ]
    assert kindless == []


@pytest.mark.parametrize(
    ("name", "builtin"),
    [
        ("lifeboat.model.settings.SettingsError", ValueError),
        ("lifeboat.model.notice.MalformedMessage", ValueError),
        ("lifeboat.karpenter.budget_spec.BudgetError", ValueError),
        ("lifeboat.karpenter.cron.CronError", ValueError),
        ("lifeboat.karpenter.requirements.Unsatisfiable", ValueError),
        ("lifeboat.rotation.model.StateError", ValueError),
        ("lifeboat.kube.pool_lock.LockTimeout", RuntimeError),
        ("lifeboat.kube.pool_lock.LeaseNamespaceMissing", RuntimeError),
        ("lifeboat.flow.routing.NotYetKnown", RuntimeError),
        ("lifeboat.model.ledger.HandlingInProgress", RuntimeError),
        ("lifeboat.runtime.handler.AllRecordsFailed", RuntimeError),
        ("lifeboat.kube.eks_auth.EksAuthError", RuntimeError),
        ("lifeboat.rotation.store.Gone", LookupError),
        ("lifeboat.kube.client.Conflict", Exception),
    ],
)
def test_each_keeps_its_name_and_the_builtin_base_it_had(
    name: str, builtin: type[BaseException]
) -> None:
    module, _, attribute = name.rpartition(".")
    cls = getattr(importlib.import_module(module), attribute)
    assert issubclass(cls, builtin) and issubclass(cls, LifeboatError)


def test_no_assert_is_a_run_time_check_in_the_lambdas_code() -> None:
    asserts = [
        f"{path.relative_to(LAYER)}:{node.lineno}"
        for path in sorted(LAYER.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assert)
    ]
    assert asserts == []
