"""Auto Scaling lifecycle actions: heartbeats while a drain runs, CONTINUE when done."""

from __future__ import annotations

import logging
from typing import Any

from lifeboat.model.notice import LifecycleHook

_log = logging.getLogger(__name__)


class AutoScalingLifecycle:
    """The two Auto Scaling calls of a terminate hook, on a boto3 ``autoscaling`` client."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def complete(self, hook: LifecycleHook, result: str = "CONTINUE") -> None:
        try:
            self._client.complete_lifecycle_action(
                LifecycleHookName=hook.hook_name,
                AutoScalingGroupName=hook.auto_scaling_group,
                LifecycleActionToken=hook.action_token,
                LifecycleActionResult=result,
                InstanceId=hook.instance_id,
            )
        except self._client.exceptions.ClientError as error:
            if not _no_active_action(error):
                raise
            # Completed by an earlier delivery, or the hook timed out and AWS went on.
            _log.info("no active lifecycle action for %s: already completed", hook.instance_id)

    def heartbeat(self, hook: LifecycleHook) -> None:
        try:
            self._client.record_lifecycle_action_heartbeat(
                LifecycleHookName=hook.hook_name,
                AutoScalingGroupName=hook.auto_scaling_group,
                LifecycleActionToken=hook.action_token,
                InstanceId=hook.instance_id,
            )
        except self._client.exceptions.ClientError as error:
            if not _no_active_action(error):
                raise
            _log.info("no active lifecycle action for %s: nothing to extend", hook.instance_id)


def _no_active_action(error: Any) -> bool:
    response = getattr(error, "response", {}) or {}
    code = response.get("Error", {}).get("Code")
    message = str(response.get("Error", {}).get("Message", ""))
    return code == "ValidationError" and "No active Lifecycle Action found" in message
