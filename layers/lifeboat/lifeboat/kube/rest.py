"""How :class:`lifeboat.kube.client.KubeApi` reaches an API server: the official client's REST
layer.

``kubernetes.client.rest.RESTClientObject`` holds the TLS settings, proxy and connection pool
of one ``Configuration``; :class:`RestClient` pairs the two, as ``ApiClient`` does, without
importing ``kubernetes.client.api_client`` (pydantic and a pydantic model built at import:
cold start the Lambda would pay for deserialisation it never uses).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kubernetes.client.rest import RESTClientObject
from urllib3.util.retry import Retry

if TYPE_CHECKING:
    from kubernetes.client.configuration import Configuration

# What ApiClient sends as User-Agent: API server audit logs and metrics see no difference.
USER_AGENT = "OpenAPI-Generator/{version}/python"


class ClientLike(Protocol):
    """What :class:`lifeboat.kube.client.KubeApi` uses of a client: its configuration (host,
    bearer token) and its REST layer. :class:`RestClient` and ``kubernetes.client.ApiClient``
    both have them."""

    configuration: Configuration
    rest_client: RESTClientObject


class RestClient:
    """The official client's REST layer for one ``Configuration``, without ``ApiClient``."""

    def __init__(self, configuration: Configuration) -> None:
        self.configuration = configuration
        self.rest_client = RESTClientObject(configuration)


def user_agent() -> str:
    from kubernetes.client import __version__

    return USER_AGENT.format(version=__version__)


def disable_transport_retries(api_client: ClientLike) -> None:
    """Leave retries to :class:`lifeboat.kube.client.RetryPolicy` alone. urllib3's default retries
    a GET three more times on a timeout, and on a 429 sleeps the full ``Retry-After`` before
    each of them: without this, ``attempts=4`` meant up to 16 requests and seconds of unjittered
    sleeping per call against a throttled API server."""
    pool_manager = getattr(getattr(api_client, "rest_client", None), "pool_manager", None)
    pool_kw = getattr(pool_manager, "connection_pool_kw", None)
    if pool_manager is None or not isinstance(pool_kw, dict):
        return
    pool_kw["retries"] = Retry(total=False)
    pool_manager.clear()
