"""Runtime settings, read once from the environment and validated at start-up.

A setting that cannot apply is rejected with a clear error when the function starts, not
silently ignored while events are handled (the Node Termination Handler's lesson).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from lifeboat.errors import InvalidInput
from lifeboat.model.notice import Kind

# PreferNoSchedule is not offered: it is the effect of the mark a deferred node gets, and a
# node Lifeboat acted on must be told apart from one that only waits.
TAINT_EFFECTS = ("NoSchedule", "NoExecute")
KIND_ACTIONS = ("ignore", "cordon", "replace")
# How a voluntary notice's old NodeClaim is handed over (lifeboat.marks.handover): deleted
# at once, or once its replacement is initialized.
AT_ONCE = "at-once"
WHEN_READY = "when-ready"
HAND_OVERS = (AT_ONCE, WHEN_READY)


class SettingsError(InvalidInput):
    """A setting has a value Lifeboat cannot use; the message names the variable."""


@dataclass(frozen=True)
class Settings:
    """What an operator can tune. Defaults are what a user of this field would expect."""

    # Clusters this stack manages (EKS cluster names); empty means "the one configured".
    clusters: tuple[str, ...] = ()
    dry_run: bool = False
    taint_effect: str = "NoSchedule"
    # Label a node about to go node.kubernetes.io/exclude-from-external-load-balancers (in
    # the patch that taints and cordons it), as the Node Termination Handler's
    # excludeFromLoadBalancers does, so load balancers stop sending it traffic first.
    exclude_from_load_balancers: bool = True
    # Scheduled maintenance must be acted on this long before AWS's startTime at the latest.
    scheduled_change_lead: timedelta = timedelta(minutes=30)
    # Namespace of the per-NodePool Leases that serialise budget accounting.
    lease_namespace: str = "lifeboat"
    # Per-kind action for voluntary kinds: ignore, cordon (only), replace (default).
    kind_actions: Mapping[Kind, str] = field(default_factory=dict)
    # Only act on instances carrying this EC2 tag (like NTH's managedTag); None: all.
    managed_tag: str | None = None
    # Seconds to keep an unknown instance's message in the queue before giving up on it.
    unknown_instance_grace: timedelta = timedelta(0)
    # How late a notice may be (past its deadline or start, lifeboat.decide.staleness) and still be
    # obeyed as sent; later, it is re-judged as a voluntary notice, never forced.
    stale_notice_after: timedelta = timedelta(minutes=10)
    # Where the stack runs; events from elsewhere are rejected. None: not checked.
    account_id: str | None = None
    region: str | None = None
    # How long an instance's instance or system status check must have been impaired before
    # it is replaced (Karpenter's UnhealthyThreshold, instancestatus.go: 120 s).
    impaired_threshold: timedelta = timedelta(seconds=120)
    # A node only cordoned for a rebalance recommendation (``rebalance-recommendation=cordon``,
    # or a node group's node) is uncordoned when it is still running this long after; 0: never.
    rebalance_cordon_release: timedelta = timedelta(hours=6)
    # Complete Auto Scaling *launch* lifecycle actions once the new instance's node is Ready
    # (as the Node Termination Handler can). Off by default: a launch hook nobody completes
    # abandons (terminates) every new instance at its timeout, so only those who created
    # a launch hook for Lifeboat should turn it on.
    complete_launch_hooks: bool = False
    # Whether the instance status sweep also looks for ending Capacity Blocks
    # (DescribeCapacityReservations; lifeboat.aws.capacity_blocks): off with the kind's switch.
    sweep_capacity_blocks: bool = True
    # Clusters tagged <this key>=true are served too, found at run time (lifeboat.aws.discovery);
    # None: only the clusters named in ``clusters``.
    cluster_tag_key: str | None = None
    # How long a cluster's tag is trusted before it is described again.
    discovery_ttl: timedelta = timedelta(minutes=5)
    # How a voluntary notice hands a Karpenter node over (lifeboat.marks.handover): "at-once"
    # deletes the old claim as the replacement is created; "when-ready" once the
    # replacement is initialized, protecting it from consolidation until then.
    hand_over: str = AT_ONCE

    def action_for(self, kind: Kind) -> str:
        return self.kind_actions.get(kind, "replace")


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name}={raw!r}: expected true or false")


def _seconds(env: Mapping[str, str], name: str, default: timedelta) -> timedelta:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: expected a whole number of seconds") from None
    if value < 0:
        raise SettingsError(f"{name}={raw!r}: must not be negative")
    return timedelta(seconds=value)


def _kind_actions(raw: str) -> dict[Kind, str]:
    """Parse ``rebalance-recommendation=cordon,scheduled-change=replace``."""
    actions: dict[Kind, str] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        kind_name, _, action = item.partition("=")
        try:
            kind = Kind(kind_name.strip())
        except ValueError:
            raise SettingsError(
                f"LIFEBOAT_KIND_ACTIONS: unknown kind {kind_name!r}; expected one of "
                + ", ".join(k for k in Kind if k.voluntary)
            ) from None
        if not kind.voluntary and not kind.involuntary:
            raise SettingsError(
                f"LIFEBOAT_KIND_ACTIONS: {kind} is not a voluntary kind; expected one of "
                + ", ".join(k for k in Kind if k.voluntary)
            )
        if kind.involuntary:
            raise SettingsError(
                f"LIFEBOAT_KIND_ACTIONS: {kind} is involuntary (the instance goes away "
                "regardless); its action cannot be changed"
            )
        if action.strip() not in KIND_ACTIONS:
            raise SettingsError(
                f"LIFEBOAT_KIND_ACTIONS: {kind}={action!r}; "
                f"expected one of {', '.join(KIND_ACTIONS)}"
            )
        if kind is Kind.ROTATION and action.strip() == "cordon":
            raise SettingsError(
                "LIFEBOAT_KIND_ACTIONS: rotation=cordon: a rotation drains each node and waits "
                "for its pods to run elsewhere; use replace (the default) or ignore"
            )
        actions[kind] = action.strip()
    return actions


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Build :class:`Settings` from ``LIFEBOAT_*`` environment variables."""
    env = os.environ if env is None else env
    effect = env.get("LIFEBOAT_TAINT_EFFECT") or "NoSchedule"
    if effect not in TAINT_EFFECTS:
        raise SettingsError(
            f"LIFEBOAT_TAINT_EFFECT={effect!r}: expected one of {', '.join(TAINT_EFFECTS)}"
        )
    clusters = tuple(c.strip() for c in env.get("LIFEBOAT_CLUSTERS", "").split(",") if c.strip())
    return Settings(
        clusters=clusters,
        dry_run=_flag(env, "LIFEBOAT_DRY_RUN", False),
        taint_effect=effect,
        exclude_from_load_balancers=_flag(env, "LIFEBOAT_EXCLUDE_FROM_LOAD_BALANCERS", True),
        scheduled_change_lead=_seconds(
            env, "LIFEBOAT_SCHEDULED_CHANGE_LEAD_SECONDS", timedelta(minutes=30)
        ),
        lease_namespace=env.get("LIFEBOAT_LEASE_NAMESPACE") or "lifeboat",
        kind_actions=_kind_actions(env.get("LIFEBOAT_KIND_ACTIONS", "")),
        managed_tag=env.get("LIFEBOAT_MANAGED_TAG") or None,
        unknown_instance_grace=_seconds(
            env, "LIFEBOAT_UNKNOWN_INSTANCE_GRACE_SECONDS", timedelta(0)
        ),
        stale_notice_after=_seconds(env, "LIFEBOAT_STALE_NOTICE_SECONDS", timedelta(minutes=10)),
        account_id=env.get("LIFEBOAT_ACCOUNT_ID") or None,
        region=env.get("LIFEBOAT_REGION") or None,
        impaired_threshold=_seconds(
            env, "LIFEBOAT_IMPAIRED_THRESHOLD_SECONDS", timedelta(seconds=120)
        ),
        rebalance_cordon_release=_seconds(
            env, "LIFEBOAT_REBALANCE_CORDON_RELEASE_SECONDS", timedelta(hours=6)
        ),
        complete_launch_hooks=_flag(env, "LIFEBOAT_COMPLETE_LAUNCH_HOOKS", False),
        sweep_capacity_blocks=_flag(env, "LIFEBOAT_SWEEP_CAPACITY_BLOCKS", True),
        cluster_tag_key=_cluster_tag_key(env.get("LIFEBOAT_CLUSTER_TAG_KEY", "")),
        discovery_ttl=_seconds(env, "LIFEBOAT_DISCOVERY_TTL_SECONDS", timedelta(minutes=5)),
        hand_over=_hand_over(env),
    )


def _cluster_tag_key(raw: str) -> str | None:
    """An EKS tag key (1 to 128 characters; ``aws:`` is AWS's own prefix), or None."""
    key = raw.strip()
    if not key:
        return None
    if len(key) > 128 or key.lower().startswith("aws:") or "=" in key:
        raise SettingsError(
            f"LIFEBOAT_CLUSTER_TAG_KEY={raw[:140]!r}: expected a tag key of at most 128 "
            "characters, without '=' and not starting with aws: (the value is always true)"
        )
    return key


def _hand_over(env: Mapping[str, str]) -> str:
    value = env.get("LIFEBOAT_HAND_OVER") or AT_ONCE
    if value not in HAND_OVERS:
        raise SettingsError(
            f"LIFEBOAT_HAND_OVER={value!r}: expected one of {', '.join(HAND_OVERS)}"
        )
    return value
