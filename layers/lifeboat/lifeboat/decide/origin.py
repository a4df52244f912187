"""Whether a message comes from the account and region this stack serves. Pure.

A message from another account or region is rejected: its instance ids mean nothing here,
and acting on a namesake would be wrong. Asked by the flow's triage of every notice and by
the rotation of every command, so it lives below both.
"""

from __future__ import annotations

from lifeboat.model.notice import Notice
from lifeboat.model.settings import Settings


def foreign_origin(notice: Notice, settings: Settings) -> str | None:
    """Why ``notice`` comes from another account or region than the stack's, or None.

    Only a field both sides know can mismatch: a message without ``account`` (moto delivers
    EventBridge events without it; a lifecycle hook message sent straight to SQS carries no
    region) and a stack without ``account_id``/``region`` settings are not checked.
    """
    for what, theirs, ours in (
        ("account", notice.account, settings.account_id),
        ("region", notice.region, settings.region),
    ):
        if theirs and ours and theirs != ours:
            return f"event from {what} {theirs[:64]}, but this stack serves {what} {ours}"
    return None
