"""Whether Karpenter's role may call ``ec2:DescribeInstanceStatus``: the one switch of its
instance status poller (v1.12+), asked of IAM's policy simulator.

``lifeboat audit --karpenter-role-arn ARN`` calls ``iam:SimulatePrincipalPolicy`` for that
role and that action (the identity policies and permissions boundary the simulator
evaluates). Denied: the poller is off and the ``karpenter-instance-status`` check says
nothing. Allowed: the check warns. Not asked (no role given, or the simulation refused):
the check warns and prints the one command that tells.

Karpenter's poller, denied, logs once and stops polling until its pod restarts
(``instancestatus_controller.go``: a singleton whose error ends its loop with an empty
``Result``). So the deny takes effect without a restart; lifting it (giving scheduled
maintenance back to Karpenter) needs ``kubectl rollout restart`` of its Deployment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ACTION = "ec2:DescribeInstanceStatus"
DENIED = ("explicitDeny", "implicitDeny")


@dataclass(frozen=True)
class Access:
    """What IAM's simulator answered for ``role_arn`` (``decision`` None: not known, and
    ``error`` says why)."""

    role_arn: str | None
    decision: str | None = None
    error: str | None = None

    @property
    def denied(self) -> bool:
        return self.decision in DENIED

    @property
    def allowed(self) -> bool:
        return self.decision == "allowed"


def command_that_tells(role_arn: str | None) -> str:
    role = role_arn or "<Karpenter controller role ARN>"
    return (
        f"aws iam simulate-principal-policy --policy-source-arn {role} "
        f"--action-names {ACTION} --query 'EvaluationResults[0].EvalDecision'"
    )


def default_client() -> Any:
    import boto3

    return boto3.client("iam")


def simulate(role_arn: str, client: Callable[[], Any] | None = None) -> Access:
    """Ask IAM's policy simulator whether ``role_arn`` may call the action."""
    try:
        answer = (client or default_client)().simulate_principal_policy(
            PolicySourceArn=role_arn, ActionNames=[ACTION]
        )
        [result] = answer["EvaluationResults"]
        return Access(role_arn, decision=str(result["EvalDecision"]))
    except Exception as error:  # any failure leaves it unknown, said in the finding
        return Access(role_arn, error=f"{type(error).__name__}: {str(error)[:300]}")
