"""KubeApi on the official client's REST layer (``RestClient``, what the Lambda uses) sends
what it sent through ``ApiClient``: the same method, URL, headers and body, with the bearer
token its configuration's refresh hook supplies before each request.

A small HTTP server on 127.0.0.1 records each request and answers ``{}``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration

from lifeboat.kube.client import MERGE_PATCH, KubeApi, RetryPolicy
from lifeboat.kube.rest import RestClient

Recorded = dict[str, Any]


class _Recorder(BaseHTTPRequestHandler):
    seen: list[Recorded]

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append(
            {
                "method": self.command,
                "path": self.path,
                "authorization": self.headers.get("Authorization"),
                "content_type": self.headers.get("Content-Type"),
                "accept": self.headers.get("Accept"),
                "user_agent": self.headers.get("User-Agent"),
                "body": json.loads(body) if body else None,
            }
        )
        payload = b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:  # keep the test output clean
        return


@pytest.fixture
def server() -> Iterator[tuple[str, list[Recorded]]]:
    seen: list[Recorded] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _configuration(host: str, tokens: Iterator[str]) -> Configuration:
    """Configured as ``EksAuth.configuration`` does: a prefix and a hook that renews."""
    configuration = Configuration(host=host)
    configuration.api_key_prefix["BearerToken"] = "Bearer"
    configuration.api_key["BearerToken"] = "seed"

    def refresh(cfg: Configuration) -> None:
        cfg.api_key["BearerToken"] = next(tokens)

    configuration.refresh_api_key_hook = refresh  # type: ignore[assignment]
    return configuration


def _calls(kube: KubeApi) -> None:
    kube.get_node("ip-10-0-1-11.ec2.internal")
    kube.list_pods_on_node("ip-10-0-1-11.ec2.internal")
    kube.list_nodeclaims("karpenter.sh/nodepool in (general,batch),!team/x")
    kube.list_nodes("a=b c&d, e/f=ü+%")  # characters a query must escape
    kube.patch_node("n/1", [{"op": "test", "path": "/spec/unschedulable", "value": False}])
    kube.request("PATCH", "/api/v1/nodes/n1", body={"metadata": {}}, content_type=MERGE_PATCH)
    kube.create_nodeclaim({"metadata": {"generateName": "general-"}, "spec": {}})
    kube.delete_nodeclaim("general-abc", "uid-1")


class _ThroughApiClient(KubeApi):
    """KubeApi as it sent before it used the REST layer: through ``ApiClient.param_serialize``
    and ``ApiClient.call_api``, which serialise the query, headers (the client's default
    User-Agent among them), bearer token and body as the generated API classes do."""

    def _request_once(
        self, method: str, path: str, query: Any, body: Any, content_type: str
    ) -> dict[str, Any]:
        client: ApiClient = self._client  # type: ignore[assignment]
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        params = client.param_serialize(
            method=method,
            resource_path=path,
            query_params=list(query),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        response = client.call_api(*params)
        # The kubernetes client leaves read() unannotated.
        response.read()  # type: ignore[no-untyped-call]
        return dict(json.loads(response.data or b"{}"))


def test_rest_client_sends_what_api_client_sent(server: tuple[str, list[Recorded]]) -> None:
    host, seen = server
    retry = RetryPolicy(attempts=1)
    tokens = iter(f"t{i}" for i in range(99))
    _calls(_ThroughApiClient(ApiClient(_configuration(host, tokens)), retry))
    through_api_client = list(seen)
    seen.clear()
    _calls(KubeApi(RestClient(_configuration(host, iter(f"t{i}" for i in range(99)))), retry))
    assert seen == through_api_client
    assert len(seen) == 8


def test_each_request_carries_the_token_the_refresh_hook_just_gave(
    server: tuple[str, list[Recorded]],
) -> None:
    """``EksAuth.configuration`` renews an EKS token through the hook: a client kept for the
    container's life must ask it before every request, never reuse the seed."""
    host, seen = server
    kube = KubeApi(RestClient(_configuration(host, iter(["first", "second"]))))
    kube.get_node("a")
    kube.get_node("b")
    assert [r["authorization"] for r in seen] == ["Bearer first", "Bearer second"]
    assert seen[0]["user_agent"].startswith("OpenAPI-Generator/")


def test_query_and_json_patch_are_encoded_for_the_api_server(
    server: tuple[str, list[Recorded]],
) -> None:
    host, seen = server
    kube = KubeApi(RestClient(_configuration(host, iter(["t"] * 9))))
    kube.list_pods_on_node("ip-10-0-1-11.ec2.internal")
    kube.patch_node("n1", [{"op": "add", "path": "/spec/unschedulable", "value": True}])
    listing, patch = seen
    assert listing["path"] == (
        "/api/v1/pods?fieldSelector=spec.nodeName%3Dip-10-0-1-11.ec2.internal&limit=500"
    )
    assert patch["content_type"] == "application/json-patch+json"
    assert patch["body"] == [{"op": "add", "path": "/spec/unschedulable", "value": True}]


def test_an_api_clients_default_headers_go_with_each_request(
    server: tuple[str, list[Recorded]],
) -> None:
    """ApiClient.param_serialize adds the client's default headers to every request; an
    ApiClient handed to KubeApi (replay's kubeconfig) keeps them."""
    host, seen = server
    api_client = ApiClient(_configuration(host, iter(["t"] * 9)))
    # The kubernetes client leaves set_default_header() unannotated.
    api_client.set_default_header("User-Agent", "lifeboat-replay")  # type: ignore[no-untyped-call]
    KubeApi(api_client).get_node("a")
    assert seen[0]["user_agent"] == "lifeboat-replay"
