"""DynamoDB for the ledger, a round trip away and costing what DynamoDB costs a client.

Where the DynamoDB ledger's time went (issue 36): profiled, three quarters of a
``PowertoolsLedger.once`` in the bench was moto emulating DynamoDB *inside the bench's
process* (parsing condition expressions into syntax trees, validating, building responses):
CPU under the GIL that the storm's other threads, Lifeboat's own work, waited for, and that
DynamoDB spends on its own servers. Moved to moto's server in a process of its own, it was
no better: that process, single-threaded under its own GIL, answered one request at a time
on a shared 2-core machine (its throughput, not DynamoDB's latency, was measured).

So the ledger's table here is :class:`DynamoDbTable`: a botocore ``before-send`` hook that
answers the four requests Powertools' DynamoDB persistence layer makes (PutItem with its
condition, UpdateItem with SET, GetItem, DeleteItem) from a dict, after a round trip
(:data:`ROUND_TRIP`, DynamoDB's single-digit milliseconds within a region) that holds no
lock. botocore still serialises, signs and parses every request and response, and retries
as configured: what stays in the bench's process is what Lambda pays. A request it does not
know fails loudly rather than answering wrongly.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from botocore.awsrequest import AWSResponse

from bench.aws_endpoints import _Raw
from bench.cluster import REGION
from lifeboat.aws.retries import client_config, retry_within_deadline

# A DynamoDB request's round trip within a region (its documented "single-digit
# millisecond" latency).
ROUND_TRIP = 0.005

Item = dict[str, dict[str, Any]]
_TOKEN = re.compile(r"\s*(\(|\)|<=|>=|<>|<|>|=|AND\b|OR\b|NOT\b|[a-z_]+\([^)]*\)|[#:]\w+)")


class DynamoDbTable:
    """One table keyed by ``id`` (template.yaml's IdempotencyTable), in memory."""

    def __init__(self, table: str, round_trip: float = ROUND_TRIP) -> None:
        self.table = table
        self.round_trip = round_trip
        self.requests = 0
        self._items: dict[str, Item] = {}
        self._lock = threading.Lock()
        self._sleep: Callable[[float], None] = time.sleep

    def client(self, counter: Any = None) -> Any:
        """A DynamoDB client on this table, configured as the Lambda's."""
        import boto3

        client = boto3.Session().client("dynamodb", region_name=REGION, config=client_config())
        if counter is not None:
            counter.attach(client)
        client.meta.events.register_first("before-send.dynamodb", self._answer)
        return retry_within_deadline(client)

    def _answer(self, request: Any, **_: Any) -> AWSResponse:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else str(target)).split(".")[-1]
        body = json.loads(request.body or b"{}")
        self._sleep(self.round_trip)
        handler = {
            "PutItem": self._put,
            "UpdateItem": self._update,
            "GetItem": self._get,
            "DeleteItem": self._delete,
        }.get(operation)
        if handler is None or body.get("TableName") != self.table:
            raise NotImplementedError(f"bench DynamoDB: {operation} on {body.get('TableName')}")
        with self._lock:
            self.requests += 1
            status, answer = handler(body)
        return _json_response(request, status, answer)

    def _put(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        item: Item = body["Item"]
        key = item["id"]["S"]
        old = self._items.get(key)
        condition = body.get("ConditionExpression")
        if condition is not None and not _holds(condition, old, body):
            failed: dict[str, Any] = {
                "__type": "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
                "message": "The conditional request failed",
            }
            if old is not None and body.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD":
                failed["Item"] = old
            return 400, failed
        self._items[key] = item
        return 200, {}

    def _update(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        expression: str = body["UpdateExpression"]
        if not expression.startswith("SET ") or body.get("ConditionExpression"):
            raise NotImplementedError(f"bench DynamoDB: UpdateExpression {expression!r}")
        key = body["Key"]["id"]["S"]
        item = self._items.setdefault(key, {"id": {"S": key}})
        names, values = body.get("ExpressionAttributeNames", {}), body["ExpressionAttributeValues"]
        for assignment in expression[4:].split(","):
            name, value = (part.strip() for part in assignment.split("="))
            item[names.get(name, name)] = values[value]
        return 200, {}

    def _get(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        item = self._items.get(body["Key"]["id"]["S"])
        return 200, ({"Item": item} if item is not None else {})

    def _delete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self._items.pop(body["Key"]["id"]["S"], None)
        return 200, {}


def _json_response(request: Any, status: int, answer: dict[str, Any]) -> AWSResponse:
    headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "bench"}
    return AWSResponse(request.url, status, headers, _Raw(json.dumps(answer).encode()))


def _holds(expression: str, item: Item | None, body: dict[str, Any]) -> bool:
    """A condition of OR, AND, parentheses, attribute_(not_)exists and comparisons."""
    tokens = [m.group(1) for m in _TOKEN.finditer(expression)]
    if "".join(tokens).replace(" ", "") != expression.replace(" ", ""):
        raise NotImplementedError(f"bench DynamoDB: ConditionExpression {expression!r}")
    names = body.get("ExpressionAttributeNames", {})
    values = body.get("ExpressionAttributeValues", {})
    position = 0

    def attribute(token: str) -> Any:
        if token.startswith(":"):
            return _plain(values[token])
        found = (item or {}).get(names.get(token, token))
        return None if found is None else _plain(found)

    def primary() -> bool:
        nonlocal position
        token = tokens[position]
        position += 1
        if token == "(":
            result = either()
            position += 1  # ")"
            return result
        if token.startswith(("attribute_exists(", "attribute_not_exists(")):
            name = token[token.index("(") + 1 : -1].strip()
            present = (item or {}).get(names.get(name, name)) is not None
            return present if token.startswith("attribute_exists") else not present
        left, operator, right = attribute(token), tokens[position], tokens[position + 1]
        position += 2
        other = attribute(right)
        if left is None or other is None:
            return False
        return bool(
            {"<": left < other, ">": left > other, "=": left == other, "<>": left != other}[
                operator
            ]
        )

    def both() -> bool:
        nonlocal position
        result = primary()
        while position < len(tokens) and tokens[position] == "AND":
            position += 1
            result = primary() and result
        return result

    def either() -> bool:
        nonlocal position
        result = both()
        while position < len(tokens) and tokens[position] == "OR":
            position += 1
            result = both() or result
        return result

    return either()


def _plain(value: dict[str, Any]) -> Any:
    if "N" in value:
        return Decimal(value["N"])
    if "S" in value:
        return value["S"]
    raise NotImplementedError(f"bench DynamoDB: attribute value {value!r}")
