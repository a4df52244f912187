"""Kubernetes API clients for EKS clusters, authenticated with the Lambda's IAM role.

EKS accepts a bearer token that is a presigned STS ``GetCallerIdentity`` URL: the API server
(aws-iam-authenticator) calls that URL and learns which IAM principal signed it. The URL
signs the ``x-k8s-aws-id: <cluster name>`` header so a token minted for one cluster cannot be
replayed against another. This module builds that token exactly as ``aws eks get-token``
does::

    token = "k8s-aws-v1." + base64url(presigned_url).rstrip("=")

and hands out ``kubernetes`` clients that fetch a fresh token by themselves, so a client kept
for the container's life never sends an expired one.

What is cached per container (one :class:`EksAuth` per process is the intent):

* the cluster's endpoint and CA from ``eks:DescribeCluster``, for the container's life
  (:class:`ClusterFacts`);
* the token, renewed :data:`TOKEN_RENEW_AFTER` after it was minted (EKS accepts a token for
  15 minutes after its signing time; renewing at 10 leaves room for clock skew and a slow call);
* one client per cluster (:class:`lifeboat.kube.rest.RestClient`: the official client's REST
  layer and ``Configuration``, without the ``ApiClient`` module and the pydantic it loads).

Each cluster has its own lock: the first contact with one cluster (a ``DescribeCluster`` call)
never holds up requests to the others, which matters to a stack serving dozens of clusters.
Under Lambda SnapStart, :meth:`EksAuth.forget_tokens` and :meth:`EksAuth.close_connections`
run after every restore (``lifeboat.runtime.snapstart``): a token minted before the snapshot would
be shared by every environment restored from it, and its sockets are dead.

The token is a credential: it is never logged, never written to disk, and never part of an
exception message. The CA is public and is passed in memory (``ca_cert_data``), not via /tmp.

Example::

    from lifeboat.kube.eks_auth import EksAuth
    from lifeboat.kube.client import KubeApi

    auth = EksAuth()  # one per container: it caches endpoints, CAs and tokens
    kube = KubeApi(auth.api_client("prod-eu"))
    kube.get_node("ip-10-0-1-11.ec2.internal")

For replay against a live cluster from a workstation, :func:`api_client_from_kubeconfig`
uses a kubeconfig instead (its ``exec`` plugin, usually ``aws eks get-token``, does the rest).
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import boto3
from kubernetes.client.configuration import Configuration

from lifeboat.errors import ClusterError
from lifeboat.kube.rest import RestClient

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

__all__ = [
    "CLUSTER_ID_HEADER",
    "PRESIGN_EXPIRES_SECONDS",
    "TOKEN_PREFIX",
    "TOKEN_RENEW_AFTER",
    "ClusterFacts",
    "ClusterInfo",
    "EksAuth",
    "EksAuthError",
    "api_client_from_kubeconfig",
    "decode_ca",
    "generate_token",
]

TOKEN_PREFIX = "k8s-aws-v1."
CLUSTER_ID_HEADER = "x-k8s-aws-id"
# Lifetime of the presigned URL itself, as `aws eks get-token` sets it. EKS still accepts the
# token for 15 minutes after its X-Amz-Date; that, not this, is what renewal works against.
PRESIGN_EXPIRES_SECONDS = 60
TOKEN_RENEW_AFTER = 10 * 60.0

Clock = Callable[[], float]
"""Seconds on a monotonic scale; injectable so tests can move time forward."""

_log = logging.getLogger(__name__)


class EksAuthError(ClusterError, RuntimeError):
    """The cluster cannot be reached with the Lambda's credentials; the message says why."""


@dataclass(frozen=True)
class ClusterInfo:
    """What a Kubernetes client needs to know about an EKS cluster (all of it public)."""

    name: str
    endpoint: str
    # PEM text when EKS returns a PEM bundle (it does), DER bytes otherwise.
    ca_data: str | bytes


# --- keeping the signature out of logs -------------------------------------------------------
#
# botocore logs the canonical request (with X-Amz-Security-Token) and the signature at DEBUG
# while it signs. Those are enough to rebuild the token, so while a token is being presigned on
# this thread, botocore.auth's debug records are dropped. Other threads' logging is untouched.

_signing = threading.local()


class _DropWhileSigning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(_signing, "active", False)


_SIGNING_FILTER = _DropWhileSigning()
for _name in ("botocore.auth", "botocore.signers", "botocore.endpoint", "botocore.hooks"):
    logging.getLogger(_name).addFilter(_SIGNING_FILTER)


@contextmanager
def _quiet_signing() -> Iterator[None]:
    _signing.active = True
    try:
        yield
    finally:
        _signing.active = False


# --- token ------------------------------------------------------------------------------------


def _regional_sts_client(session: boto3.Session, region: str) -> Any:
    """An STS client on the regional endpoint (never the global ``sts.amazonaws.com``).

    Regional is the default from botocore 1.36 on; older runtimes still pick the global
    endpoint in us-east-1, so the endpoint is forced there.
    """
    sts = session.client("sts", region_name=region)
    if urlparse(sts.meta.endpoint_url).hostname == "sts.amazonaws.com":
        sts = session.client(
            "sts", region_name=region, endpoint_url=f"https://sts.{region}.amazonaws.com"
        )
    return sts


def generate_token(sts_client: Any, cluster_name: str) -> str:
    """Return an EKS bearer token for ``cluster_name`` signed by ``sts_client``'s credentials.

    ``sts_client`` should target the regional STS endpoint of the cluster's region.
    """
    if not cluster_name:
        raise EksAuthError("generate_token: cluster_name is empty; pass the EKS cluster name")

    def add_cluster_header(request: Any, **_: Any) -> None:
        request.headers[CLUSTER_ID_HEADER] = cluster_name

    event = "before-sign.sts.GetCallerIdentity"
    handler_id = f"lifeboat-eks-auth-{id(add_cluster_header)}"
    sts_client.meta.events.register(event, add_cluster_header, unique_id=handler_id)
    try:
        with _quiet_signing():
            url: str = sts_client.generate_presigned_url(
                "get_caller_identity",
                Params={},
                ExpiresIn=PRESIGN_EXPIRES_SECONDS,
                HttpMethod="GET",
            )
    finally:
        sts_client.meta.events.unregister(event, unique_id=handler_id)
    encoded = base64.urlsafe_b64encode(url.encode("utf-8")).decode("ascii").rstrip("=")
    return TOKEN_PREFIX + encoded


def decode_ca(data: str) -> str | bytes:
    """The CA of ``DescribeCluster`` (base64): PEM text when it is PEM, DER bytes otherwise."""
    raw = base64.b64decode(data)
    if raw.lstrip().startswith(b"-----BEGIN"):
        return raw.decode("ascii")
    return raw


@dataclass
class _Token:
    """A cluster's bearer token, and when it was minted (monotonic seconds)."""

    value: str
    minted_at: float


class ClusterFacts:
    """Per-container cache of each cluster's endpoint and CA (``eks:DescribeCluster``),
    described once per cluster, each under its own lock so that the first contact with one
    cluster never holds up the others. Safe to share between threads."""

    def __init__(self, session: boto3.Session, region: str, eks_client: Any = None) -> None:
        self._session = session
        self.region = region
        self._eks = eks_client
        self._lock = threading.Lock()  # guards the dictionaries below, never held for a call
        self._cluster_locks: dict[str, threading.Lock] = {}
        self._clusters: dict[str, ClusterInfo] = {}

    def lock_for(self, cluster_name: str) -> threading.Lock:
        """The lock of ``cluster_name``: its first description, its token's minting."""
        with self._lock:
            return self._cluster_locks.setdefault(cluster_name, threading.Lock())

    def info(self, cluster_name: str) -> ClusterInfo:
        """Endpoint and CA of ``cluster_name``, described once per container."""
        cached = self._clusters.get(cluster_name)
        if cached is not None:
            return cached
        with self.lock_for(cluster_name):
            cached = self._clusters.get(cluster_name)
            if cached is not None:  # described by another thread meanwhile
                return cached
            info = self._describe(cluster_name)
            with self._lock:
                self._clusters[cluster_name] = info
            return info

    def _describe(self, cluster_name: str) -> ClusterInfo:
        with self._lock:
            if self._eks is None:
                self._eks = self._session.client("eks", region_name=self.region)
            eks = self._eks
        try:
            cluster = eks.describe_cluster(name=cluster_name)["cluster"]
        except eks.exceptions.ResourceNotFoundException:
            raise EksAuthError(
                f"EKS cluster {cluster_name!r} not found in {self.region}; check "
                "LIFEBOAT_CLUSTERS and the stack's region"
            ) from None
        endpoint = cluster.get("endpoint")
        ca = (cluster.get("certificateAuthority") or {}).get("data")
        if not endpoint or not ca:
            raise EksAuthError(
                f"EKS cluster {cluster_name!r} has no endpoint or CA yet "
                f"(status {cluster.get('status')!r}); is it still being created?"
            )
        return ClusterInfo(name=cluster_name, endpoint=endpoint, ca_data=decode_ca(ca))

    def remember(self, info: ClusterInfo) -> bool:
        """Take ``info`` from someone who described the cluster already; whether it changed
        what was known of it (a cluster re-created under the same name)."""
        with self._lock:
            before = self._clusters.get(info.name)
            self._clusters[info.name] = info
            return before is not None and before != info

    def forget(self, cluster_name: str) -> None:
        """Drop what is known of ``cluster_name``."""
        with self._lock:
            self._clusters.pop(cluster_name, None)


class EksAuth:
    """Per-container cache of tokens and Kubernetes clients, over :class:`ClusterFacts`
    (the clusters' endpoints and CAs).

    Safe to share between threads. ``session`` defaults to a new :class:`boto3.Session`
    (the Lambda's role); ``region`` to the session's region.
    """

    def __init__(
        self,
        *,
        session: boto3.Session | None = None,
        region: str | None = None,
        eks_client: Any = None,
        sts_client: Any = None,
        clock: Clock = time.monotonic,
        renew_after: float = TOKEN_RENEW_AFTER,
    ) -> None:
        self._session = session or boto3.Session()
        resolved_region = region or self._session.region_name
        if not resolved_region:
            raise EksAuthError(
                "EksAuth: no AWS region; set AWS_REGION (Lambda sets it) or pass region="
            )
        self.region: str = resolved_region
        self.facts = ClusterFacts(self._session, resolved_region, eks_client)
        self._sts = sts_client
        self._clock = clock
        self._renew_after = renew_after
        self._lock = threading.Lock()  # guards the dictionaries below, never held for a call
        self._tokens: dict[str, _Token] = {}
        self._api_clients: dict[str, RestClient] = {}

    # -- cluster ---------------------------------------------------------------------------

    def cluster_info(self, cluster_name: str) -> ClusterInfo:
        """Endpoint and CA of ``cluster_name``, described once per container."""
        return self.facts.info(cluster_name)

    def remember(self, info: ClusterInfo) -> None:
        """Take a cluster's endpoint and CA from someone who described it already
        (``lifeboat.aws.discovery``). A cluster whose endpoint or CA changed (re-created under
        the same name) loses its client and token: the next request builds new ones."""
        if self.facts.remember(info):
            with self._lock:
                self._api_clients.pop(info.name, None)
                self._tokens.pop(info.name, None)

    def forget(self, cluster_name: str) -> None:
        """Drop what is cached for ``cluster_name`` (no longer served)."""
        self.facts.forget(cluster_name)
        with self._lock:
            self._api_clients.pop(cluster_name, None)
            self._tokens.pop(cluster_name, None)

    def cached_clusters(self) -> tuple[str, ...]:
        """The clusters a client is cached for."""
        with self._lock:
            return tuple(sorted(self._api_clients))

    # -- token -----------------------------------------------------------------------------

    def token(self, cluster_name: str) -> str:
        """A bearer token for ``cluster_name``, reused until :data:`TOKEN_RENEW_AFTER`."""
        with self.facts.lock_for(cluster_name):
            now = self._clock()
            cached = self._tokens.get(cluster_name)
            if cached is not None and now - cached.minted_at < self._renew_after:
                return cached.value
            with self._lock:
                if self._sts is None:
                    self._sts = _regional_sts_client(self._session, self.region)
                sts = self._sts
            value = generate_token(sts, cluster_name)
            self._tokens[cluster_name] = _Token(value=value, minted_at=now)
            _log.debug("minted EKS token for cluster %s", cluster_name)
            return value

    def forget_tokens(self) -> None:
        """Drop every cached token: the next request of each cluster mints its own."""
        with self._lock:
            self._tokens.clear()

    def close_connections(self) -> None:
        """Drop the pooled connections of every client (they reconnect on the next call)."""
        with self._lock:
            clients = list(self._api_clients.values())
        for api_client in clients:
            pool_manager = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
            if pool_manager is not None:
                pool_manager.clear()

    # -- kubernetes clients ----------------------------------------------------------------

    def configuration(self, cluster_name: str) -> Configuration:
        """A ``kubernetes.client.Configuration`` that refreshes its token before each call."""
        info = self.cluster_info(cluster_name)
        configuration = Configuration(host=info.endpoint, ca_cert_data=info.ca_data)
        configuration.verify_ssl = True
        configuration.api_key_prefix["BearerToken"] = "Bearer"

        def refresh(cfg: Configuration) -> None:
            cfg.api_key["BearerToken"] = self.token(cluster_name)

        # The client only sends the header when a key is present, so seed it; the hook then
        # swaps in a renewed token before every request.
        refresh(configuration)
        # Typed as None in the generated client, but documented as a callable hook.
        configuration.refresh_api_key_hook = refresh  # type: ignore[assignment]
        return configuration

    def api_client(self, cluster_name: str) -> RestClient:
        """The container's client for ``cluster_name`` (for
        :class:`lifeboat.kube.client.KubeApi`)."""
        cached = self._api_clients.get(cluster_name)
        if cached is not None:
            return cached
        configuration = self.configuration(cluster_name)  # outside any lock: may call EKS
        with self._lock:
            return self._api_clients.setdefault(cluster_name, RestClient(configuration))


def api_client_from_kubeconfig(path: str, context: str | None = None) -> ApiClient:
    """An ``ApiClient`` from a kubeconfig file (replay against a live cluster).

    ``kubernetes.config`` is imported here, not at the top: the Lambda never reads a
    kubeconfig, and that module (with the OAuth and exec-plugin machinery behind it) is a
    tenth of a second of cold start.
    """
    from kubernetes import config as k8s_config

    api_client: ApiClient = k8s_config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=path, context=context
    )
    return api_client
