"""A batch's instance lookup: EC2, or the cluster's NodeClaims while EC2 is throttled.

Each batch asks EC2 once (``DescribeInstances``) what its instances are. In a large Spot
reclaim that is one call per batch of every environment at once, on a token bucket shared with
the whole account (100 Describe* requests, refilled at 20 a second, of which Karpenter and other
tools take their share): the calls queue behind ``RequestLimitExceeded`` and the two-minute
warnings wait. Karpenter's own interruption controller never asks EC2 for a Spot warning: it
finds the NodeClaim whose ``status.providerID`` names the instance (``lifeboat.kube.claim_index``).

So :class:`ClaimsWhenThrottled` asks EC2 as before, but without the deadline's window of
retries (and, on a client made with :func:`end_on_first_throttle`, without botocore's few
either): once EC2 answers a lookup ``RequestLimitExceeded`` (a storm), it lists each served
cluster's NodeClaims (pages of 500: one list per cluster, not one call per warning) and
answers from them, for :data:`STORM_HOLD`, the Spot and capacity reservation interruptions
whose instance a claim names.
EC2 is still asked, with the message's whole deadline window of retries, for everything else:
node-group nodes (no claim; their cluster is known only from EC2's tags), instances of other
clusters or accounts, claims too new for the list (re-listed at most every
:data:`INDEX_REFRESH`), and every other kind of notice, whose handling needs what only EC2
knows (a state change is stale if the instance runs again; a lifecycle hook names its group).
Why listing the claims is right in a storm and wrong otherwise: a list of a 5,000-node
cluster's claims costs the API server more than one warning's lookup, and much less than the
hundreds of lookups a storm brings, each held back by the throttled bucket.

An answer from a claim can never make Lifeboat act on the wrong node: the taint's patch is
guarded by the instance's providerID, and the resolver reads the Node and the claim and keeps
them only when their providerID names the instance (``lifeboat.flow.resolve``). Nor can one
hide a warning: an answer that leads to no node is let go only when its claim is gone or being
deleted (Karpenter acted first); a claim that still stands is checked with EC2
(``lifeboat.flow.claim_check``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from datetime import timedelta
from typing import Any

from lifeboat.errors import RetryLater
from lifeboat.kube.claim_index import index_claims
from lifeboat.kube.client import KARPENTER, KubeApi
from lifeboat.model.instances import InstanceDirectory, InstanceInfo
from lifeboat.model.notice import Kind, Notice
from lifeboat.model.patience import retrying_for, seconds_left

_log = logging.getLogger(__name__)

# The kinds a NodeClaim answers for: two-minute warnings whose handling needs the node, the
# claim and its pool, never EC2's state or tags.
ANSWERED_BY_CLAIMS = frozenset({Kind.SPOT_INTERRUPTION, Kind.CAPACITY_RESERVATION_INTERRUPTION})
# How long after EC2's last RequestLimitExceeded the claims answer first.
STORM_HOLD = timedelta(minutes=5)
# How long EC2's retries for a batch's other instances may hold back what the claims answered:
# their messages come back within seconds instead, for their own window.
REST_PATIENCE = timedelta(seconds=5)
# A claim list older than this is listed again when a warning's instance is not in it.
INDEX_REFRESH = timedelta(seconds=60)
# The most clusters whose claims are listed: a stack serving more (an organisation's clusters
# found by their tag) would list them all for one warning; EC2 alone answers there.
MAX_CLUSTERS_LISTED = 10
# The error codes of a throttled AWS call (botocore's ThrottledRetryableChecker's, EC2's first).
THROTTLED = frozenset(
    {
        "RequestLimitExceeded",
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "SlowDown",
    }
)

Clusters = Callable[[], Iterable[tuple[str, KubeApi]]]


def answerable(notices: Iterable[Notice]) -> set[str]:
    """The instances every one of whose notices a NodeClaim may answer for."""
    yes: set[str] = set()
    no: set[str] = set()
    for notice in notices:
        if notice.instance_id:
            fits = notice.kind in ANSWERED_BY_CLAIMS and notice.lifecycle is None
            (yes if fits else no).add(notice.instance_id)
    return yes - no


def describe_batch(
    directory: InstanceDirectory, wanted: Sequence[str], notices: Iterable[Notice]
) -> dict[str, InstanceInfo]:
    """The batch's lookup: :meth:`ClaimsWhenThrottled.describe_batch` when ``directory`` is
    one, else the directory's own ``describe``."""
    if isinstance(directory, ClaimsWhenThrottled):
        return directory.describe_batch(wanted, answerable(notices))
    return directory.describe(wanted)


def served(names: Callable[[], Iterable[str]], kube: Callable[[str], KubeApi]) -> Clusters:
    """The served clusters' APIs, named by ``names`` (the named clusters, or those found by
    their tag) each time the claims are listed; none beyond :data:`MAX_CLUSTERS_LISTED`
    (no client is made for them)."""

    def clusters() -> list[tuple[str, KubeApi]]:
        named = list(names())
        if len(named) > MAX_CLUSTERS_LISTED:
            _log.warning(
                "%d clusters served: their NodeClaims are not listed, EC2 answers alone",
                len(named),
            )
            return []
        return [(name, kube(name)) for name in named]

    return clusters


class LookupIncomplete(RetryLater):
    """EC2 failed for some of a batch's instances after the claims answered for others:
    ``found`` holds those answers, so only the messages of the others fail."""

    def __init__(self, found: dict[str, InstanceInfo], error: BaseException) -> None:
        super().__init__(f"{len(found)} instances found from NodeClaims; EC2 failed: {error!r}")
        self.found = found


def found_before(error: BaseException) -> dict[str, InstanceInfo]:
    """What a failed lookup had found already (nothing, unless :class:`LookupIncomplete`)."""
    return dict(error.found) if isinstance(error, LookupIncomplete) else {}


# Set while a batch's first try of EC2 is under way: its first throttled answer ends the call
# (raising FirstThrottle out of botocore's retry loop) instead of being retried, because the
# claims can answer at once.
_first_throttle_ends: ContextVar[bool] = ContextVar("lifeboat_first_throttle_ends", default=False)


class FirstThrottle(RetryLater):
    """EC2 throttled the first try of a lookup the NodeClaims may answer."""

    response = {"Error": {"Code": "RequestLimitExceeded"}}


def end_on_first_throttle(client: Any) -> Any:
    """``client`` (EC2's) with a ``needs-retry`` hook that, inside a first try
    (:class:`ClaimsWhenThrottled`), ends DescribeInstances at its first throttled answer."""

    def observe(response: Any = None, **_: Any) -> None:
        parsed = response[1] if isinstance(response, tuple) and len(response) == 2 else None
        code = _error_code(parsed)
        if code in THROTTLED and _first_throttle_ends.get():
            raise FirstThrottle(f"EC2 answered {code}")

    client.meta.events.register_first(
        "needs-retry.ec2.DescribeInstances", observe, unique_id="lifeboat-first-throttle"
    )
    return client


def is_throttled(error: BaseException) -> bool:
    """Whether an AWS call failed because the account's request rate is exceeded."""
    return _error_code(getattr(error, "response", None)) in THROTTLED


def _error_code(response: Any) -> Any:
    """The error code of a parsed AWS response (botocore's ``{"Error": {"Code": ...}}``)."""
    return (response.get("Error") or {}).get("Code") if isinstance(response, dict) else None


class ClaimsWhenThrottled:
    """An :class:`InstanceDirectory` on EC2 that, while EC2 throttles, takes what the
    served clusters' NodeClaims say for Spot and capacity reservation interruptions. Lives as
    long as the Lambda environment; ``describe`` (every caller but a batch's lookup) is EC2's."""

    def __init__(
        self,
        ec2: InstanceDirectory,
        clusters: Clusters,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ec2 = ec2
        self._clusters = clusters
        self._clock = clock
        self._throttled_at: float | None = None
        self._index: dict[str, InstanceInfo] = {}
        self._listed_at: float | None = None
        self._lock = threading.Lock()
        self.lists = 0  # how many times the claims were listed (tests, the bench)

    def describe(self, instance_ids: Sequence[str]) -> dict[str, InstanceInfo]:
        return self._ec2.describe(instance_ids)

    def describe_batch(
        self, instance_ids: Sequence[str], answerable: set[str]
    ) -> dict[str, InstanceInfo]:
        """``instance_ids`` described; those in ``answerable`` from the claims in a storm."""
        found = self._from_claims(instance_ids, answerable) if self._storm() else {}
        rest = [i for i in instance_ids if i not in found]
        if not rest:
            return found
        if self._storm() or not answerable.intersection(rest):
            return found | self._ec2_rest(found, rest)
        token = _first_throttle_ends.set(True)
        try:
            with retrying_for(None):  # a throttled EC2 has an alternative: no window
                return found | self._ec2.describe(rest)
        except Exception as error:
            if not is_throttled(error):  # not a storm: EC2 again, in the deadline's window
                return found | self._ec2_rest(found, rest)
            self._throttled_at = self._clock()
            _log.warning(
                "EC2 throttles instance lookups: Spot warnings are looked up in the "
                "clusters' NodeClaims for the next %d minutes",
                STORM_HOLD.total_seconds() // 60,
                extra={"error": repr(error)[:300]},
            )
        finally:
            _first_throttle_ends.reset(token)
        found |= self._from_claims(rest, answerable)
        return found | self._ec2_rest(found, [i for i in rest if i not in found])

    def _ec2_rest(self, found: dict[str, InstanceInfo], rest: list[str]) -> dict[str, InstanceInfo]:
        """EC2 for what the claims did not answer, keeping their answers if EC2 fails. While
        answers wait, for at most :data:`REST_PATIENCE` of the deadline's window: the batch
        has one lookup, and a warning found from its claim must not wait out another's
        retries (the rest's messages come back within seconds, for their own window)."""
        if not rest:
            return {}
        left = seconds_left()
        patience = None if left is None else min(left, REST_PATIENCE.total_seconds())
        try:
            if not found or patience is None:
                return self._ec2.describe(rest)
            with retrying_for(timedelta(seconds=patience), clock=self._clock):
                return self._ec2.describe(rest)
        except Exception as error:
            if is_throttled(error):
                self._throttled_at = self._clock()
            if not found:
                raise
            raise LookupIncomplete(found, error) from error

    def _storm(self) -> bool:
        at = self._throttled_at
        return at is not None and self._clock() - at < STORM_HOLD.total_seconds()

    def _from_claims(self, ids: Sequence[str], answerable: set[str]) -> dict[str, InstanceInfo]:
        """What the claims say of ``ids`` in ``answerable``; listed again when one is
        missing and the list is older than :data:`INDEX_REFRESH` (or none was made)."""
        wanted = [i for i in ids if i in answerable]
        if not wanted:
            return {}
        with self._lock:
            missing = any(i not in self._index for i in wanted)
            stale = (
                self._listed_at is None
                or self._clock() - self._listed_at >= INDEX_REFRESH.total_seconds()
            )
            if missing and stale:
                self._relist()
            return {i: self._index[i] for i in wanted if i in self._index}

    def _relist(self) -> None:
        """Every served cluster's NodeClaims, page by page; a cluster whose list fails
        answers nothing (EC2 is asked for its instances)."""
        index: dict[str, InstanceInfo] = {}
        doubled: set[str] = set()
        try:
            clusters = list(self._clusters())
        except Exception as error:  # discovery failed: EC2 answers, as without the claims
            _log.warning("could not tell the clusters served", extra={"error": repr(error)[:300]})
            clusters = []
        for cluster, kube in clusters:
            try:
                listed = index_claims(kube.each(f"{KARPENTER}/nodeclaims"), cluster)
            except Exception as error:
                _log.warning(
                    "could not list the NodeClaims of cluster %s",
                    cluster,
                    extra={"error": repr(error)[:300]},
                )
                continue
            doubled |= index.keys() & listed.keys()  # claimed in two clusters: EC2 decides
            index |= listed
        self._index = {i: info for i, info in index.items() if i not in doubled}
        self._listed_at = self._clock()
        self.lists += 1
