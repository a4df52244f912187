"""The names that tell a rotation's messages apart: their source and detail-types.

``lifeboat.flow.classify`` reads them for every message; the rotation's models, planning and
state store (``request``, ``runner`` and what they import) load only when one does belong.
"""

from __future__ import annotations

from enum import StrEnum

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
