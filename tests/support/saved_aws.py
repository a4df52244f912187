"""A boto3 session that answers from saved AWS answers (the JSON of `aws eks
describe-nodegroup`, `aws autoscaling describe-auto-scaling-groups`, `aws ec2
describe-launch-template-versions` ...), for `lifeboat convert --node-group` on node-group
definitions published by AWS, terraform-aws-eks and eksctl (tests/fixtures/convert).

Only the calls convert makes are answered, each as the AWS API would from those answers:
a missing node group is ResourceNotFoundException, launch template versions are chosen by
number, ``$Latest`` or ``$Default``, subnets and security groups are filtered by id or tag.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError


class SavedAws:
    """Stands in for ``boto3.Session``: ``client(service)`` answers from ``answers``."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def client(self, service: str) -> Any:
        return {"eks": _Eks, "autoscaling": _AutoScaling, "ec2": _Ec2}[service](self.answers)


class _Saved:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers

    def _list(self, operation: str, key: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = (self.answers.get(operation) or {}).get(key) or []
        return found


def _not_found(operation: str, message: str) -> ClientError:
    error = {"Error": {"Code": "ResourceNotFoundException", "Message": message}}
    return ClientError(error, operation)


class _Eks(_Saved):
    def describe_nodegroup(self, clusterName: str, nodegroupName: str) -> dict[str, Any]:
        group = (self.answers.get("DescribeNodegroup") or {}).get("nodegroup")
        if not group or group["nodegroupName"] != nodegroupName:
            raise _not_found("DescribeNodegroup", f"No node group found for name: {nodegroupName}.")
        return {"nodegroup": group}

    def describe_cluster(self, name: str) -> dict[str, Any]:
        return dict(self.answers["DescribeCluster"])


class _AutoScaling(_Saved):
    def describe_auto_scaling_groups(
        self,
        AutoScalingGroupNames: list[str],
    ) -> dict[str, Any]:
        groups = self._list("DescribeAutoScalingGroups", "AutoScalingGroups")
        return {
            "AutoScalingGroups": [
                g for g in groups if g["AutoScalingGroupName"] in AutoScalingGroupNames
            ]
        }


def _tag_filter(items: list[dict[str, Any]], filters: list[dict[str, Any]]) -> list[Any]:
    for flt in filters:
        key = flt["Name"].removeprefix("tag:")
        items = [
            i
            for i in items
            if any(t["Key"] == key and t["Value"] in flt["Values"] for t in i.get("Tags") or [])
        ]
    return items


class _Ec2(_Saved):
    def describe_launch_template_versions(self, Versions: list[str], **which: str) -> Any:
        versions = [
            v
            for v in self._list("DescribeLaunchTemplateVersions", "LaunchTemplateVersions")
            if v["LaunchTemplateId"] == which.get("LaunchTemplateId")
            or v["LaunchTemplateName"] == which.get("LaunchTemplateName")
        ]
        wanted = Versions[0]
        if wanted == "$Latest":
            versions = sorted(versions, key=lambda v: -int(v["VersionNumber"]))[:1]
        elif wanted == "$Default":
            versions = [v for v in versions if v.get("DefaultVersion")]
        else:
            versions = [v for v in versions if str(v["VersionNumber"]) == wanted]
        return {"LaunchTemplateVersions": versions}

    def describe_images(self, ImageIds: list[str]) -> dict[str, Any]:
        images = self._list("DescribeImages", "Images")
        return {"Images": [i for i in images if i["ImageId"] in ImageIds]}

    def describe_subnets(
        self,
        SubnetIds: list[str] | None = None,
        Filters: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        subnets = self._list("DescribeSubnets", "Subnets")
        if SubnetIds is not None:
            subnets = [s for s in subnets if s["SubnetId"] in SubnetIds]
        return {"Subnets": _tag_filter(subnets, Filters or [])}

    def describe_security_groups(
        self,
        GroupIds: list[str] | None = None,
        Filters: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        groups = self._list("DescribeSecurityGroups", "SecurityGroups")
        if GroupIds is not None:
            groups = [g for g in groups if g["GroupId"] in GroupIds]
        return {"SecurityGroups": _tag_filter(groups, Filters or [])}

    def describe_instance_types(self, InstanceTypes: list[str]) -> dict[str, Any]:
        types = self._list("DescribeInstanceTypes", "InstanceTypes")
        return {"InstanceTypes": [t for t in types if t["InstanceType"] in InstanceTypes]}
