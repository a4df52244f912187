"""AWS endpoints with the frictions of a real account, for the storm and the tests.

Each is a botocore ``before-send`` hook: the request is built, signed and handed to the
hook as it would be to the network, and the hook's answer goes through botocore's parser
and retry handler (``lifeboat.aws.retries``) exactly as EC2's would. Nothing here
short-circuits botocore earlier (``before-call``, as ``Stubber`` does), which would skip the
retries being measured.

* :class:`Ec2Endpoint`: ``DescribeInstances`` answered from known instance facts, after a
  latency, and throttled by a :class:`TokenBucket` at EC2's documented request rates
  (``RequestLimitExceeded``, HTTP 503, as EC2 answers it).
* :func:`add_latency`: a fixed round trip before another endpoint answers (moto's DynamoDB).
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from botocore.awsrequest import AWSResponse

from lifeboat.model.instances import InstanceInfo

# EC2's request rate limits for non-mutating actions (Describe*): a bucket of 100 tokens,
# refilled at 20 a second, per account and region ("Request throttling for the Amazon EC2
# API", EC2 developer guide, request token bucket sizes and refill rates).
EC2_DESCRIBE_BUCKET = 100
EC2_DESCRIBE_REFILL_PER_SECOND = 20.0

_EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15/"


@dataclass
class TokenBucket:
    """EC2's token bucket, shared with the account's other callers: they take
    ``others_per_second`` of each second's refill (Karpenter, the console, other tools),
    Lifeboat gets what is left; the bucket starts at ``tokens`` (0: a storm drained it)."""

    capacity: float = EC2_DESCRIBE_BUCKET
    refill_per_second: float = EC2_DESCRIBE_REFILL_PER_SECOND
    others_per_second: float = 0.0
    tokens: float = EC2_DESCRIBE_BUCKET
    clock: Callable[[], float] = time.monotonic
    granted: int = 0
    refused: int = 0
    _last: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self) -> bool:
        with self._lock:
            now = self.clock()
            if self._last is not None:
                spare = self.refill_per_second - self.others_per_second
                self.tokens = min(self.capacity, max(0.0, self.tokens + spare * (now - self._last)))
            self._last = now
            if self.tokens >= 1:
                self.tokens -= 1
                self.granted += 1
                return True
            self.refused += 1
            return False


class _Raw(io.BytesIO):
    """The raw body botocore reads an ``AWSResponse`` from."""

    def stream(self, **_: Any) -> Iterator[bytes]:
        while chunk := self.read(65536):
            yield chunk


def _response(request: Any, status: int, body: str) -> AWSResponse:
    headers = {"Content-Type": "text/xml;charset=UTF-8", "x-amzn-RequestId": "bench"}
    return AWSResponse(request.url, status, headers, _Raw(body.encode()))


def throttled_response(request: Any) -> AWSResponse:
    """EC2's answer to a request over the account's rate: 503 ``RequestLimitExceeded``."""
    body = (
        "<Response><Errors><Error><Code>RequestLimitExceeded</Code>"
        "<Message>Request limit exceeded.</Message></Error></Errors>"
        "<RequestID>bench</RequestID></Response>"
    )
    return _response(request, 503, body)


def _tag_items(info: InstanceInfo) -> Iterable[tuple[str, str]]:
    tags = dict(info.tags)
    for key, value in (
        ("karpenter.sh/nodeclaim", info.nodeclaim),
        ("karpenter.sh/nodepool", info.nodepool),
        ("eks:cluster-name", info.cluster),
        ("aws:autoscaling:groupName", info.auto_scaling_group),
    ):
        if value and key not in tags:
            tags[key] = value
    return sorted(tags.items())


def _instance_xml(info: InstanceInfo) -> str:
    def element(name: str, value: str | None) -> str:
        return f"<{name}>{escape(value)}</{name}>" if value else ""

    tags = "".join(
        f"<item><key>{escape(k)}</key><value>{escape(v)}</value></item>"
        for k, v in _tag_items(info)
    )
    return (
        "<item>"
        + element("instanceId", info.instance_id)
        + element("privateDnsName", info.node_name)
        + element("instanceType", info.instance_type)
        + element("imageId", info.image_id)
        + f"<placement>{element('availabilityZone', info.zone)}</placement>"
        + f"<instanceState><code>16</code><name>{escape(info.state or 'running')}</name>"
        + "</instanceState>"
        + f"<tagSet>{tags}</tagSet>"
        + "</item>"
    )


def describe_instances_xml(infos: Iterable[InstanceInfo]) -> str:
    """A DescribeInstancesResponse naming ``infos``, one reservation each."""
    reservations = "".join(
        f"<item><reservationId>r-{i.instance_id[2:]}</reservationId>"
        f"<instancesSet>{_instance_xml(i)}</instancesSet></item>"
        for i in infos
    )
    return (
        f'<DescribeInstancesResponse xmlns="{_EC2_NS}"><requestId>bench</requestId>'
        f"<reservationSet>{reservations}</reservationSet></DescribeInstancesResponse>"
    )


def _filtered_ids(request: Any) -> list[str]:
    body = request.body
    text = body.decode() if isinstance(body, bytes) else str(body or "")
    query = parse_qs(text)
    ids: list[str] = []
    for key, values in query.items():
        if key.startswith("Filter.") and ".Value." in key:
            name = query.get(key.split(".Value.")[0] + ".Name", [""])[0]
            if name == "instance-id":
                ids.extend(values)
        elif key.startswith("InstanceId."):
            ids.extend(values)
    return ids


@dataclass
class Ec2Endpoint:
    """EC2's ``DescribeInstances`` for the instances in ``infos``, ``latency`` seconds a
    call, throttled by ``bucket`` (None: never) or, first, by ``refuse_next`` scripted
    refusals. Counts calls and refusals."""

    infos: Mapping[str, InstanceInfo]
    latency: float = 0.0
    bucket: TokenBucket | None = None
    refuse_next: int = 0
    sleep: Callable[[float], None] = time.sleep
    calls: int = 0
    throttled: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def attach(self, client: Any) -> Any:
        client.meta.events.register("before-send.ec2.DescribeInstances", self._answer)
        return client

    def _answer(self, request: Any, **_: Any) -> AWSResponse:
        with self._lock:
            self.calls += 1
            scripted = self.refuse_next > 0
            if scripted:
                self.refuse_next -= 1
        if self.latency:
            self.sleep(self.latency)
        if scripted or (self.bucket is not None and not self.bucket.take()):
            with self._lock:
                self.throttled += 1
            return throttled_response(request)
        ids = _filtered_ids(request)
        found = [self.infos[i] for i in ids if i in self.infos]
        return _response(request, 200, describe_instances_xml(found))


def add_latency(client: Any, seconds: float, sleep: Callable[[float], None] = time.sleep) -> Any:
    """Every request of ``client`` waits ``seconds`` (a network round trip) before whatever
    answers it (moto) does; the wait holds no lock, like a socket's."""

    def wait(**_: Any) -> None:
        sleep(seconds)

    service = client.meta.service_model.service_id.hyphenize()
    client.meta.events.register_first(f"before-send.{service}", wait)
    return client
