"""What operators send about rotations: custom EventBridge events with source ``lifeboat``.

- ``Lifeboat Rotation Requested``: ``rotation`` (its name), ``uid`` (the rotation's identity;
  default: the event's id), ``cluster``, ``selector`` (``labels`` and/or ``amis``),
  ``maxInFlight`` (default 1), ``healthGate.timeoutSeconds`` (default 600);
- ``Lifeboat Rotation Pause Requested``, ``... Resume Requested``, ``... Cancel Requested``,
  ``... Rollback Requested``: ``rotation``, ``uid`` (required: the rotation the command is
  for, as ``lifeboat rotate`` printed it and ``lifeboat status`` shows it), ``cluster``. The
  event's ``time`` is the command's: one older than the rotation, or than the last command
  it applied, is rejected (a command replayed from last week does not resume this week's).

``lifeboat rotate`` puts them on the bus, and so may any automation; the stack's rotation rule
brings them into the queue. Anyone who may put events on the bus can send one, so they are
validated as strictly as AWS's events, and more: a field this schema does not know is an
error (a typo such as ``maxInflight`` must not silently become the default).

>>> command = parse_command({
...     "id": "0b5c3a52-0000-4000-8000-000000000001", "source": "lifeboat",
...     "detail-type": "Lifeboat Rotation Requested", "time": "2026-12-01T14:05:00Z",
...     "detail": {"rotation": "legacy", "selector": {"labels": {"team": "web"}}}})
>>> command.verb, command.spec.label_selector, command.spec.max_in_flight
(<Verb.REQUEST: 'request'>, 'team=web', 1)
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Annotated, Any

from pydantic import ConfigDict, Field, StringConstraints, field_validator, model_validator

from lifeboat.events.envelope import EventBridgeEvent
from lifeboat.events.models import Model
from lifeboat.kube.labels import label_key_problems, label_value_problems
from lifeboat.model.instants import format_instant
from lifeboat.model.notice import Kind, MalformedMessage, Notice

# The events' vocabulary lives beside the cheap check the pipeline makes on every message;
# re-exported here, where the events are read and written.
from lifeboat.rotation.messages import DETAIL_TYPE_OF as DETAIL_TYPE_OF
from lifeboat.rotation.messages import DETAIL_TYPES as DETAIL_TYPES
from lifeboat.rotation.messages import SOURCE as SOURCE
from lifeboat.rotation.messages import Verb as Verb
from lifeboat.wakeup.format import ClusterName

DEFAULT_HEALTH_TIMEOUT = timedelta(minutes=10)
# A rotation's name is part of its ConfigMap's name (``lifeboat-rotation-<name>``) and the
# value of a label: a DNS-1123 label short enough for both.
NAME_MAX = 40


@dataclass(frozen=True)
class RotationSpec:
    """Which nodes to rotate, how many at once, and how long their pods may take to run
    Ready elsewhere. ``labels`` and ``amis`` both select (a node must match both)."""

    name: str
    cluster: str | None = None
    # The rotation's identity (commands name it); "" in the spec: the request event's id.
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    amis: tuple[str, ...] = ()
    max_in_flight: int = 1
    health_timeout: timedelta = DEFAULT_HEALTH_TIMEOUT
    # Checkpoints: after each wave (cumulative: "1", "10%", "100%") the rotation pauses
    # itself until resumed (or rolled back). Empty: one wave, no checkpoint.
    waves: tuple[str, ...] = ()
    # AMI validation: the nodes that took a drained node's pods must run one of these.
    allowed_amis: tuple[str, ...] = ()

    @property
    def label_selector(self) -> str:
        """The labels as a Kubernetes label selector ("" when the AMIs alone select)."""
        return ",".join(f"{key}={value}" for key, value in sorted(self.labels.items()))

    def describe_selector(self) -> str:
        parts = [self.label_selector] if self.labels else []
        if self.amis:
            parts.append("AMI " + " or ".join(self.amis))
        return " and ".join(parts)

    def detail(self) -> dict[str, Any]:
        """The ``detail`` of the request event (what :func:`parse_command` reads back)."""
        selector: dict[str, Any] = {}
        if self.labels:
            selector["labels"] = dict(self.labels)
        if self.amis:
            selector["amis"] = list(self.amis)
        body: dict[str, Any] = {"rotation": self.name}
        if self.uid:
            body["uid"] = self.uid
        if self.cluster:
            body["cluster"] = self.cluster
        body["selector"] = selector
        body["maxInFlight"] = self.max_in_flight
        body["healthGate"] = {"timeoutSeconds": int(self.health_timeout.total_seconds())}
        if self.allowed_amis:
            body["healthGate"]["allowedAmis"] = list(self.allowed_amis)
        if self.waves:
            body["waves"] = list(self.waves)
        return body


@dataclass(frozen=True)
class RotationCommand:
    """One operator request: start (with its ``spec``), pause, resume or cancel a rotation."""

    verb: Verb
    name: str
    event_id: str
    event_time: datetime
    cluster: str | None = None
    account: str | None = None
    region: str | None = None
    spec: RotationSpec | None = None
    # The rotation a command is for (a request: the uid it gives its rotation).
    uid: str = ""

    @property
    def dedup_key(self) -> str:
        """Once per event, as an AWS event is once per (event, instance)."""
        return f"{self.event_id}#-"

    def notice(self) -> Notice:
        """The command as the notice the checks every message passes take (its origin)."""
        return Notice(
            Kind.ROTATION,
            self.event_id,
            self.event_time,
            account=self.account,
            region=self.region,
            detail=self.name,
        )


def parse_command(message: Mapping[str, Any]) -> RotationCommand:
    """The command ``message`` (an EventBridge event) carries; :class:`MalformedMessage`
    naming the field when it is not valid; a rejected command stays a ``rotation``."""
    try:
        return _command(message)
    except MalformedMessage as error:
        error.kind = error.kind or Kind.ROTATION
        raise


def _command(message: Mapping[str, Any]) -> RotationCommand:
    event = EventBridgeEvent.load(message)
    verb = DETAIL_TYPES[event.detail_type]
    if verb is Verb.REQUEST:
        request = event.detail_as(_RequestDetail)
        uid = request.uid or event.id
        spec = RotationSpec(
            name=request.rotation,
            cluster=request.cluster,
            uid=uid,
            labels=dict(request.selector.labels),
            amis=tuple(dict.fromkeys(request.selector.amis)),
            max_in_flight=request.max_in_flight,
            health_timeout=timedelta(seconds=request.health_gate.timeout_seconds),
            waves=tuple(request.waves),
            allowed_amis=tuple(dict.fromkeys(request.health_gate.allowed_amis)),
        )
        name, cluster = request.rotation, request.cluster
    else:
        control = event.detail_as(_ControlDetail)
        spec, name, cluster, uid = None, control.rotation, control.cluster, control.uid
    return RotationCommand(
        verb=verb,
        name=name,
        event_id=event.id,
        event_time=event.time,
        cluster=cluster,
        account=event.account,
        region=event.region,
        spec=spec,
        uid=uid,
    )


def command_event(
    verb: Verb,
    name: str,
    *,
    cluster: str | None = None,
    spec: RotationSpec | None = None,
    now: datetime,
    event_id: str | None = None,
    uid: str = "",
) -> dict[str, Any]:
    """The EventBridge event of a command, as :func:`parse_command` reads it (and as
    ``lifeboat rotate --out`` writes it for ``lifeboat replay``); ``uid``: the rotation a
    command is for (a request's is its spec's)."""
    if verb is Verb.REQUEST:
        if spec is None:
            raise ValueError("a rotation request needs its spec")
        detail = spec.detail()
    else:
        detail = {"rotation": name, "uid": uid, **({"cluster": cluster} if cluster else {})}
    return {
        "version": "0",
        "id": event_id or str(uuid.uuid4()),
        "detail-type": DETAIL_TYPE_OF[verb],
        "source": SOURCE,
        "time": format_instant(now),
        "resources": [],
        "detail": detail,
    }


# -- the wire format, validated ---------------------------------------------------------------

RotationName = Annotated[
    str,
    StringConstraints(max_length=NAME_MAX, pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"),
]
AmiId = Annotated[str, StringConstraints(pattern=r"^ami-[0-9a-f]{8,17}$")]
# A wave's cumulative size: a node count, or a percentage of the nodes selected.
# A rotation's uid: what lifeboat rotate generates (a UUID), or an EventBridge event's id.
RotationUid = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]{0,63}$")]
WaveSize = Annotated[str, StringConstraints(pattern=r"^([1-9][0-9]{0,4}|([1-9][0-9]?|100)%)$")]


class _Strict(Model):
    """Operators write these: an unknown field is a mistake to report, not to ignore."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class _Selector(_Strict):
    labels: dict[str, str] = Field(default_factory=dict, max_length=20)
    amis: list[AmiId] = Field(default_factory=list, max_length=50)

    @field_validator("labels")
    @classmethod
    def _valid_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for key, value in labels.items():
            for problem in label_key_problems(key):
                raise ValueError(f"key {key[:80]!r}: {problem}")
            for problem in label_value_problems(value):
                raise ValueError(f"value {value[:80]!r} of {key!r}: {problem}")
        return labels

    @model_validator(mode="after")
    def _selects_something(self) -> _Selector:
        if not self.labels and not self.amis:
            # Rotating every node of a cluster is never what a typo should do.
            raise ValueError("give labels, amis or both: an empty selector would select every node")
        return self


class _HealthGate(_Strict):
    timeout_seconds: int = Field(
        int(DEFAULT_HEALTH_TIMEOUT.total_seconds()), alias="timeoutSeconds", ge=30, le=86_400
    )
    allowed_amis: list[AmiId] = Field(default_factory=list, alias="allowedAmis", max_length=50)


class _RequestDetail(_Strict):
    rotation: RotationName
    uid: RotationUid | None = None
    cluster: ClusterName | None = None
    selector: _Selector
    max_in_flight: int = Field(1, alias="maxInFlight", ge=1, le=100)
    health_gate: _HealthGate = Field(
        default_factory=lambda: _HealthGate.model_validate({}), alias="healthGate"
    )
    waves: list[WaveSize] = Field(default_factory=list, max_length=20)


class _ControlDetail(_Strict):
    rotation: RotationName
    uid: RotationUid
    cluster: ClusterName | None = None
