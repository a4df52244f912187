"""Which messages belong to rotations, told apart without loading the rotation itself.

The pipeline asks this of every message and wake-up; the rotation's models, planning and
state store (``request``, ``runner`` and what they import) load only when one does belong.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from lifeboat.model.notice import Kind
from lifeboat.wakeup.codec import Task, Wakeup

SOURCE = "lifeboat"


class Verb(StrEnum):
    REQUEST = "request"
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"
    ROLLBACK = "rollback"  # cancel, and return the nodes it took out of service


DETAIL_TYPES: dict[str, Verb] = {
    "Lifeboat Rotation Requested": Verb.REQUEST,
    "Lifeboat Rotation Pause Requested": Verb.PAUSE,
    "Lifeboat Rotation Resume Requested": Verb.RESUME,
    "Lifeboat Rotation Cancel Requested": Verb.CANCEL,
    "Lifeboat Rotation Rollback Requested": Verb.ROLLBACK,
}
DETAIL_TYPE_OF = {verb: detail_type for detail_type, verb in DETAIL_TYPES.items()}


def is_rotation_event(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is one of the rotation events (checked before AWS's parsers)."""
    detail_type = message.get("detail-type")
    return (
        message.get("source") == SOURCE
        and isinstance(detail_type, str)
        and (detail_type in DETAIL_TYPES)
    )


def concerns(wakeup: Wakeup) -> bool:
    """Whether the pipeline hands ``wakeup`` to the rotation (commands always go there)."""
    if wakeup.task is Task.ROTATE:
        return True
    return wakeup.notice.kind is Kind.ROTATION and wakeup.task in (
        Task.DECIDE,
        Task.CONTINUE_DRAIN,
        Task.HAND_OVER,  # a rollback cancels it (lifeboat.rotation.rollback)
    )
