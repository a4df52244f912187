"""What an SQS record body is, and what it wraps.

A body is one of:

* an EventBridge event (``source``, ``detail-type``, ``detail``, ...), the usual case;
* an SNS notification (``"Type": "Notification"``) whose ``Message`` is a JSON string of an
  EventBridge event or of an Auto Scaling message;
* an Auto Scaling message sent straight to SQS: a lifecycle hook message
  (``LifecycleTransition``, ``LifecycleActionToken``, ...) or a notification with an
  ``Event`` field such as ``autoscaling:TEST_NOTIFICATION``.

:func:`load_body` turns the body into a JSON object, :func:`unwrap` peels SNS off and says
which of the forms is inside, and :class:`EventBridgeEvent` is the validated EventBridge
envelope the per-kind parsers receive. :func:`is_status_response` and
:func:`is_reservations_response` tell EC2's answers (never obeyed from the queue) apart.
Which of these, or of Lifeboat's own messages, a queue message is, is said in one place:
``lifeboat.flow.classify``.

The envelope follows Powertools' ``EventBridgeModel`` (same fields and aliases) but is our own:
importing Powertools' parser models costs ~130 ms of cold start, and ``account``/``region``
must be optional because moto delivers events without ``account``. It is read with
:class:`~lifeboat.events.base.Fields`, not pydantic (see ``lifeboat.events.base``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from lifeboat.events.base import Fields, join_path, known_id, malformed, quote, shift
from lifeboat.model.notice import Kind, Notice

if TYPE_CHECKING:
    from lifeboat.events.models import M


# Said in the notices of an event whose ``time`` is empty.
EMPTY_TIME = "time empty: the receipt time stands in (as the Node Termination Handler)"


class Form(StrEnum):
    """What an SQS body (or an SNS ``Message``) holds."""

    EVENTBRIDGE = "eventbridge"
    LIFECYCLE_HOOK = "lifecycle-hook"
    AUTOSCALING_NOTIFICATION = "autoscaling-notification"


@dataclass(frozen=True)
class Unwrapped:
    """One message, SNS removed. ``path`` prefixes field names in error reasons."""

    form: Form
    payload: dict[str, Any]
    path: str = ""
    region: str | None = None
    """The region of the SNS topic the message came through, when it did."""


@dataclass(frozen=True)
class EventBridgeEvent:
    """An EventBridge event envelope. ``detail`` is validated later, by the kind's parser."""

    id: str
    detail_type: str
    source: str
    time: datetime
    detail: dict[str, Any]
    version: str = "0"
    account: str | None = None
    region: str | None = None
    resources: list[str] = field(default_factory=list)
    path: str = field(default="", compare=False)
    """Where the event sits in the body (``Message`` through SNS), for error reasons."""
    received_at: datetime | None = field(default=None, compare=False)
    """When Lifeboat received the message: what stands in for a time AWS left empty."""
    assumed: str = field(default="", compare=False)
    """What was assumed for an empty field, said in every notice's ``detail``."""

    @classmethod
    def load(
        cls, payload: Mapping[str, Any], *, path: str = "", received_at: datetime | None = None
    ) -> EventBridgeEvent:
        """The validated envelope of ``payload``, or :class:`MalformedMessage`.

        ``time: ""`` (a string, as AWS's schema types it, but empty) is the receipt time
        ``received_at``, as the Node Termination Handler's ``EventBridgeEvent.getTime`` uses
        the current time for a time it cannot read; the notices say so."""
        fields = Fields(dict(payload), path=path, event_id=known_id(payload.get("id")))
        version = fields.string("version", "0")
        empty_time = payload.get("time") == "" and received_at is not None
        return cls(
            version=version,
            id=fields.identifier("id"),
            detail_type=fields.string("detail-type"),
            source=fields.string("source"),
            account=fields.string("account", None),
            time=received_at if empty_time and received_at else fields.time("time"),
            received_at=received_at,
            assumed=EMPTY_TIME if empty_time else "",
            region=fields.string("region", None),
            resources=fields.strings("resources", []),
            detail=fields.mapping("detail"),
            path=path,
        )

    def with_region(self, region: str) -> EventBridgeEvent:
        return replace(self, region=region)

    def field(self, name: str) -> str:
        """The path of envelope field ``name`` for error reasons (``Message.detail.state``)."""
        return join_path(self.path, name)

    def detail_fields(self) -> Fields:
        """``detail``, to be read field by field; errors name ``detail.<field>``."""
        return Fields(self.detail, path=self.field("detail"), event_id=self.id)

    def detail_as(self, model: type[M]) -> M:
        """``detail`` validated as the pydantic ``model`` (rotation commands); errors name
        ``detail.<field>``."""
        from lifeboat.events.models import validate

        return validate(model, self.detail, path=self.field("detail"), event_id=self.id)

    def after(self, delta: timedelta) -> datetime:
        """The event time plus ``delta``."""
        return shift(self.time, delta, field=self.field("time"), event_id=self.id)

    def assume(self, what: str) -> EventBridgeEvent:
        """This event, ``what`` added to what was assumed for its empty fields."""
        return replace(self, assumed="; ".join(a for a in (self.assumed, what) if a))

    def notice(self, kind: Kind, **fields: Any) -> Notice:
        """A notice about this event: id, time, account and region filled in; what was
        assumed for an empty field added to its ``detail``."""
        if self.assumed:
            told = fields.get("detail") or ""
            fields["detail"] = f"{told}; {self.assumed}" if told else self.assumed
        return Notice(
            kind=kind,
            event_id=self.id,
            event_time=self.time,
            account=self.account,
            region=self.region,
            **fields,
        )


@dataclass(frozen=True)
class SnsNotification:
    """The part of an SNS notification Lifeboat reads."""

    message: str
    message_id: str | None = None
    topic_arn: str | None = None

    @classmethod
    def load(cls, payload: Mapping[str, Any]) -> SnsNotification:
        fields = Fields(dict(payload), path="", event_id=known_id(payload.get("MessageId")))
        fields.literal("Type", ("Notification",))
        return cls(
            message_id=fields.string("MessageId", None),
            topic_arn=fields.string("TopicArn", None),
            message=fields.string("Message"),
        )


_JSON_TYPES: dict[type, str] = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def _json_type(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _decode(text: str, *, path: str, event_id: str | None = None) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        # Some of json's messages end in "at" ("Unterminated string starting at").
        where = (
            f"{exc.msg} char {exc.pos}"
            if exc.msg.endswith(" at")
            else f"{exc.msg} at char {exc.pos}"
        )
        raise malformed(f"{path}: not valid JSON ({where})", event_id) from None
    except RecursionError:
        raise malformed(f"{path}: not valid JSON (nested too deeply)", event_id) from None
    except ValueError:  # an integer beyond the interpreter's digit limit
        raise malformed(f"{path}: not valid JSON (number too long)", event_id) from None
    if not isinstance(value, dict):
        raise malformed(f"{path}: expected a JSON object, got {_json_type(value)}", event_id)
    return value


def load_body(body: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
    """The JSON object an SQS record body holds, or :class:`MalformedMessage`."""
    if isinstance(body, bytes | bytearray):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise malformed(f"body: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    if isinstance(body, str):
        return _decode(body, path="body")
    if isinstance(body, Mapping):
        return dict(body)
    raise malformed(f"body: expected a JSON object, got {_json_type(body)}")


# Two bodies that are EC2's answers, not messages: a DescribeInstanceStatus or a
# DescribeCapacityReservations response. Never obeyed from the queue (lifeboat.events);
# ``lifeboat replay`` reads saved ones as the sweep would (lifeboat_local.saved_statuses).


def is_status_response(payload: dict[str, Any]) -> bool:
    """Whether a message body is a ``DescribeInstanceStatus`` response (or a list of its
    pages under ``Pages``, as the sweep and ``lifeboat replay`` hand them over)."""
    return "InstanceStatuses" in payload or (
        isinstance(payload.get("Pages"), list) and "source" not in payload
    )


def is_reservations_response(payload: dict[str, Any]) -> bool:
    """Whether a message body is a ``DescribeCapacityReservations`` response (a file of one,
    replayed as the sweep would read it)."""
    return "CapacityReservations" in payload and "source" not in payload


def _is_sns(payload: Mapping[str, Any]) -> bool:
    return "Type" in payload and ("Message" in payload or "TopicArn" in payload)


def _region_of(arn: str | None) -> str | None:
    parts = arn.split(":", 5) if arn else []
    return (parts[3] or None) if len(parts) == 6 else None


def unwrap(payload: dict[str, Any], *, path: str = "") -> Unwrapped:
    """Which form ``payload`` is, with one level of SNS removed."""
    if not path and _is_sns(payload):
        note = SnsNotification.load(payload)
        inner = _decode(note.message, path="Message", event_id=note.message_id)
        if _is_sns(inner):
            raise malformed("Message: an SNS notification inside an SNS notification")
        found = unwrap(inner, path="Message")
        return Unwrapped(found.form, found.payload, found.path, _region_of(note.topic_arn))
    where = path or "body"
    if {"source", "detail-type", "detail"} & payload.keys():
        return Unwrapped(Form.EVENTBRIDGE, payload, path)
    # A lifecycle hook's message is one whatever else it carries: an ``Event`` key beside
    # ``LifecycleTransition`` must not turn it into a notification left unanswered (the
    # instance would wait for the hook's timeout).
    if "LifecycleTransition" in payload:
        return Unwrapped(Form.LIFECYCLE_HOOK, payload, path)
    if "Event" in payload:
        return Unwrapped(Form.AUTOSCALING_NOTIFICATION, payload, path)
    if {"LifecycleTransition", "LifecycleActionToken", "LifecycleHookName"} & payload.keys():
        return Unwrapped(Form.LIFECYCLE_HOOK, payload, path)
    if isinstance(payload.get("Records"), list):
        raise malformed(
            f"{where}: an SQS batch; pass the body of each record in Records, not the batch"
        )
    keys = ", ".join(quote(key) for key in list(payload)[:8]) or "none"
    raise malformed(
        f"{where}: not an EventBridge event, SNS notification or Auto Scaling lifecycle message "
        f"(keys: {keys})"
    )
