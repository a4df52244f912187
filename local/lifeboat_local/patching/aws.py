"""What patching asks AWS: instances' AMIs (``ec2:DescribeInstances``), the recommended AMIs
(``ssm:GetParameters`` on AWS's public parameters), and AMI creation dates
(``ec2:DescribeImages``)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lifeboat_local.common import UsageError


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class PatchingAws:
    def __init__(self, session: Any) -> None:
        self.ec2 = session.client("ec2")
        self.ssm = session.client("ssm")

    def _call(self, what: str, call: Any, **kwargs: Any) -> Any:
        try:
            return call(**kwargs)
        except (ClientError, BotoCoreError) as error:
            raise UsageError(f"patching: {what}: {error}") from None

    def instance_images(self, instance_ids: list[str]) -> dict[str, str]:
        """Instance id -> ImageId, for the instances EC2 knows (others are left out)."""
        found: dict[str, str] = {}
        for chunk in _chunks(sorted(set(instance_ids)), 200):
            answer = self._call(
                "ec2:DescribeInstances",
                self.ec2.describe_instances,
                Filters=[{"Name": "instance-id", "Values": chunk}],
            )
            for reservation in answer.get("Reservations") or []:
                for instance in reservation.get("Instances") or []:
                    found[instance["InstanceId"]] = instance["ImageId"]
        return found

    def parameters(self, names: list[str]) -> dict[str, str]:
        """Parameter -> value, for those that exist (10 names a call, GetParameters' limit)."""
        found: dict[str, str] = {}
        for chunk in _chunks(sorted(set(names)), 10):
            answer = self._call("ssm:GetParameters", self.ssm.get_parameters, Names=chunk)
            for parameter in answer.get("Parameters") or []:
                found[parameter["Name"]] = parameter["Value"]
        return found

    def creation_dates(self, image_ids: list[str]) -> dict[str, datetime]:
        found: dict[str, datetime] = {}
        for chunk in _chunks(sorted(set(image_ids)), 100):
            answer = self._call(
                "ec2:DescribeImages",
                self.ec2.describe_images,
                Filters=[{"Name": "image-id", "Values": chunk}],
            )
            for image in answer.get("Images") or []:
                if image.get("CreationDate"):
                    text = str(image["CreationDate"]).replace("Z", "+00:00")
                    found[image["ImageId"]] = datetime.fromisoformat(text)
        return found
