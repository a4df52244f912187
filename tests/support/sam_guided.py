"""Run ``sam deploy`` in this process with AWS answered here, not on the network.

Started by tests/unit/local/test_sam_guided_deploy.py with the SAM CLI venv's Python (sam.mk's
``.sam-venv``), never imported by the tests themselves: it needs ``samcli``, which the
project's venv does not have. Arguments are ``sam``'s (``deploy --guided ...``); the
prompts are answered on standard input.

Every AWS API call goes through ``botocore.client.BaseClient._make_api_call``; replacing it
here stubs AWS at the boto level and nothing else, so the SAM CLI's own code (prompts, config
resolution, template expansion, packaging) runs as it does for a user:

* CloudFormation ``DescribeStacks`` of SAM's managed stack answers that the stack exists,
  with its source bucket (``sam deploy --guided`` looks it up after the prompts);
* STS ``GetCallerIdentity`` answers an account of its own;
* S3 ``HeadObject`` answers 404 and ``PutObject`` succeeds (packaging uploads the code);
* ``DescribeStacks`` of the stack being deployed answers that it does not exist yet;
* ``CreateChangeSet`` is recorded and stops the run: nothing after it is needed.

Each call (service, operation, region, and the change set's parameters and capabilities)
is appended as a JSON line to the file named by ``LIFEBOAT_SAM_CALLS``.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

import botocore.client
from botocore.exceptions import ClientError

MANAGED_STACK = "aws-sam-cli-managed-default"
MANAGED_BUCKET = "aws-sam-cli-managed-default-samclisourcebucket-offline"


class OfflineStop(Exception):
    """The change set would be created now: far enough."""


def _record(entry: dict[str, Any]) -> None:
    with open(os.environ["LIFEBOAT_SAM_CALLS"], "a", encoding="utf-8") as calls:
        calls.write(json.dumps(entry, default=str) + "\n")


def _error(code: str, message: str, operation: str, status: int = 400) -> ClientError:
    response: Any = {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, operation)


def _answer(service: str, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    if service == "cloudformation" and operation == "DescribeStacks":
        if params.get("StackName") == MANAGED_STACK:
            stack = {
                "StackName": MANAGED_STACK,
                "StackStatus": "CREATE_COMPLETE",
                "CreationTime": "2026-12-01T00:00:00Z",
                "Tags": [{"Key": "ManagedStackSource", "Value": "AwsSamCli"}],
                "Outputs": [{"OutputKey": "SourceBucket", "OutputValue": MANAGED_BUCKET}],
            }
            return {"Stacks": [stack]}
        name = params.get("StackName")
        raise _error("ValidationError", f"Stack with id {name} does not exist", operation)
    if service == "sts" and operation == "GetCallerIdentity":
        arn = "arn:aws:iam::123456789012:user/offline"
        return {"Account": "123456789012", "Arn": arn, "UserId": "AIDAOFFLINE"}
    if service == "s3" and operation == "HeadObject":
        raise _error("404", "Not Found", operation, status=404)
    if service == "s3" and operation in ("PutObject", "HeadBucket", "GetBucketLocation"):
        return {}
    if service == "cloudformation" and operation == "CreateChangeSet":
        raise OfflineStop("the change set would be created now")
    raise OfflineStop(f"no offline answer for {service}:{operation}")


def _make_api_call(self: Any, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    service = self.meta.service_model.service_name
    entry: dict[str, Any] = {
        "service": service,
        "operation": operation,
        "region": self.meta.region_name,
    }
    if operation == "CreateChangeSet":
        entry["parameters"] = {
            p["ParameterKey"]: p.get("ParameterValue") for p in params.get("Parameters", [])
        }
        entry["capabilities"] = params.get("Capabilities", [])
        entry["stack"] = params.get("StackName")
    elif "StackName" in params:
        entry["stack"] = params["StackName"]
    _record(entry)
    return _answer(service, operation, params)


def main() -> None:
    setattr(botocore.client.BaseClient, "_make_api_call", _make_api_call)  # noqa: B010
    cli = importlib.import_module("samcli.cli.main").cli
    sys.argv = ["sam", *sys.argv[1:]]
    cli()


if __name__ == "__main__":
    main()
