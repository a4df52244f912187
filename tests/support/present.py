"""Narrowing for tests: the value a test needs is there, or the test fails saying what is missing.

The official client's models (typed since kubernetes 37) make every field Optional and the
emulator's ``get_object`` answers None for an absent object; these helpers turn a missing
value into a test failure naming it, where the tests used to fail with an AttributeError.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar, cast

import pytest
from kubernetes.client import ApiException

T = TypeVar("T")
M_co = TypeVar("M_co", covariant=True)


def present(value: T | None, what: str) -> T:
    """``value``, or the test fails naming ``what`` is missing."""
    if value is None:
        pytest.fail(f"{what} is missing")
    return value


class HasMetadata(Protocol[M_co]):
    """A client model or list with ``metadata`` (V1ObjectMeta or V1ListMeta)."""

    @property
    def metadata(self) -> M_co | None: ...


def meta(obj: HasMetadata[M_co]) -> M_co:
    """The object's (or list's) metadata, which a server always sends."""
    return present(obj.metadata, f"metadata of {type(obj).__name__}")


class HasSpec(Protocol[M_co]):
    """A client model with a ``spec``."""

    @property
    def spec(self) -> M_co | None: ...


class HasStatus(Protocol[M_co]):
    """A client model with a ``status``."""

    @property
    def status(self) -> M_co | None: ...


def spec_of(obj: HasSpec[M_co]) -> M_co:
    """The object's spec, or the test fails saying it is missing."""
    return present(obj.spec, f"spec of {type(obj).__name__}")


def status_part(obj: HasStatus[M_co]) -> M_co:
    """The object's status, or the test fails saying it is missing."""
    return present(obj.status, f"status of {type(obj).__name__}")


def resource_version(obj: HasMetadata[HasResourceVersion]) -> int:
    """``metadata.resourceVersion`` as the number the emulator (like etcd) makes it."""
    return int(present(meta(obj).resource_version, f"resourceVersion of {type(obj).__name__}"))


class HasResourceVersion(Protocol):
    @property
    def resource_version(self) -> str | None: ...


def error_body(error: ApiException) -> str:
    """The body of the server's error answer (a Status, as JSON)."""
    return present(error.body, "the error's body")


def as_model(obj: Mapping[str, Any], model: type[T]) -> T:
    """``obj`` handed to the client where its annotations name a model: the client sends a
    dict body as it is (``ApiClient.sanitize_for_serialization`` passes dicts through), which
    is how these tests send exactly the manifest they mean, unknown fields included."""
    return cast(T, obj)


def json_object(answer: object) -> dict[str, Any]:
    """A custom-objects answer (the client types it ``object``): the JSON object sent."""
    if not isinstance(answer, dict):
        pytest.fail(f"the server answered {type(answer).__name__}, not a JSON object")
    return answer
