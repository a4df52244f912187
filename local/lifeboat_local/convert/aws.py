"""Node groups read from AWS: an EKS managed node group (``eks:DescribeNodegroup``, its
launch template version when it has one) or a self-managed Auto Scaling group
(``autoscaling:DescribeAutoScalingGroups`` and ``ec2:DescribeLaunchTemplateVersions``);
subnets and security groups are described to select them by a tag where one tag picks
exactly the group's set (Karpenter's ``karpenter.sh/discovery``) or exactly one of them
(``Name``), by id otherwise; instance capacity comes from ``ec2:DescribeInstanceTypes``."""

from __future__ import annotations

import re
from typing import Any

from botocore.exceptions import ClientError

from lifeboat_local.convert.capacity import Capacity, from_describe
from lifeboat_local.convert.model import (
    ConversionError,
    NodeGroup,
    RootVolume,
    SelectorTerm,
    Taint,
)
from lifeboat_local.convert.settings import DISCOVERY_TAG

EFFECTS = {
    "NO_SCHEDULE": "NoSchedule",
    "PREFER_NO_SCHEDULE": "PreferNoSchedule",
    "NO_EXECUTE": "NoExecute",
}
# EKS amiType prefix -> (alias family, device of the volume the group's disk size is for).
AMI_TYPES = (
    ("AL2023_", "al2023", "/dev/xvda"),
    ("AL2_", "al2", "/dev/xvda"),
    ("BOTTLEROCKET_", "bottlerocket", "/dev/xvdb"),  # Bottlerocket's data volume
    ("WINDOWS_CORE_2019", "windows2019", "/dev/sda1"),
    ("WINDOWS_CORE_2022", "windows2022", "/dev/sda1"),
)
# amiFamily of an AMI id, from its name (EKS-optimized names).
AMI_NAME_FAMILIES = (
    ("amazon-eks-node-al2023", "AL2023"),
    ("amazon-eks-node-", "AL2"),
    ("amazon-eks-gpu-node-", "AL2"),
    ("bottlerocket-", "Bottlerocket"),
)
# Cluster Autoscaler's node-template tags on a self-managed group.
LABEL_TAG = "k8s.io/cluster-autoscaler/node-template/label/"
TAINT_TAG = "k8s.io/cluster-autoscaler/node-template/taint/"


class AwsReader:
    def __init__(self, session: Any) -> None:
        self.eks = session.client("eks")
        self.autoscaling = session.client("autoscaling")
        self.ec2 = session.client("ec2")

    # --- capacity -------------------------------------------------------------------------

    def capacities(self, instance_types: list[str]) -> dict[str, Capacity]:
        try:
            answer = self.ec2.describe_instance_types(InstanceTypes=instance_types)
        except ClientError as error:
            raise ConversionError(
                f"ec2:DescribeInstanceTypes {', '.join(instance_types)}: {error}"
            ) from None
        return from_describe(answer)

    # --- subnets and security groups ------------------------------------------------------

    def _terms(self, kind: str, ids: list[str]) -> tuple[list[SelectorTerm], list[str]]:
        """Selector terms for ``ids`` (subnets or security groups), and their zones."""
        if kind == "subnet":
            found = self.ec2.describe_subnets(SubnetIds=ids)["Subnets"]
            id_key, describe, listed = "SubnetId", self.ec2.describe_subnets, "Subnets"
        else:
            found = self.ec2.describe_security_groups(GroupIds=ids)["SecurityGroups"]
            id_key, describe, listed = (
                "GroupId",
                self.ec2.describe_security_groups,
                "SecurityGroups",
            )
        zones = sorted({s["AvailabilityZone"] for s in found if "AvailabilityZone" in s})

        def selects(key: str, value: str) -> set[str]:
            answer = describe(Filters=[{"Name": f"tag:{key}", "Values": [value]}])
            return {item[id_key] for item in answer[listed]}

        tags = [{t["Key"]: t["Value"] for t in item.get("Tags") or []} for item in found]
        shared = {tags[0].get(DISCOVERY_TAG)} if tags else set()
        if all(t.get(DISCOVERY_TAG) in shared for t in tags) and None not in shared:
            value = next(iter(shared))
            assert value is not None
            if selects(DISCOVERY_TAG, value) == set(ids):
                return [SelectorTerm(tags=((DISCOVERY_TAG, value),))], zones
        terms = []
        for item, item_tags in zip(found, tags, strict=True):
            name = item_tags.get("Name")
            if name and selects("Name", name) == {item[id_key]}:
                terms.append(SelectorTerm(tags=(("Name", name),)))
            else:
                terms.append(SelectorTerm(id=item[id_key]))
        return terms, zones

    # --- launch templates -----------------------------------------------------------------

    def launch_template(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The launch template version's data (``$Default`` when no version is named)."""
        ask: dict[str, Any] = {
            "Versions": [str(spec.get("Version") or spec.get("version") or "$Default")]
        }
        template_id = spec.get("LaunchTemplateId") or spec.get("id")
        if template_id:
            ask["LaunchTemplateId"] = template_id
        else:
            ask["LaunchTemplateName"] = spec.get("LaunchTemplateName") or spec.get("name")
        versions = self.ec2.describe_launch_template_versions(**ask)["LaunchTemplateVersions"]
        if not versions:
            raise ConversionError(f"launch template {ask}: no such version")
        data: dict[str, Any] = versions[0]["LaunchTemplateData"]
        return data

    def _ami_family(self, image_id: str, where: str) -> str:
        images = self.ec2.describe_images(ImageIds=[image_id])["Images"]
        name = images[0].get("Name", "") if images else ""
        for prefix, family in AMI_NAME_FAMILIES:
            if name.startswith(prefix):
                return family
        raise ConversionError(
            f"{where}: cannot tell the AMI family of {image_id} ({name or 'not found'}): "
            "it is not an EKS-optimized or Bottlerocket AMI; set amiFamily (AL2023, AL2, "
            "Bottlerocket or Custom with its userData) in the EC2NodeClass by hand"
        )

    def _from_template(self, group: NodeGroup, data: dict[str, Any]) -> None:
        if data.get("ImageId"):
            group.ami_id = data["ImageId"]
            group.ami_family = self._ami_family(data["ImageId"], group.source)
            group.ami_alias = None
        for mapping in data.get("BlockDeviceMappings") or []:
            ebs = mapping.get("Ebs") or {}
            if "VolumeSize" in ebs:
                group.root_volume = RootVolume(
                    size_gib=int(ebs["VolumeSize"]),
                    volume_type=ebs.get("VolumeType", "gp3"),
                    iops=ebs.get("Iops"),
                    throughput=ebs.get("Throughput"),
                    device_name=mapping["DeviceName"],
                    encrypted=ebs.get("Encrypted"),
                )
                break
        groups = list(data.get("SecurityGroupIds") or [])
        for interface in data.get("NetworkInterfaces") or []:
            groups += interface.get("Groups") or []
        if groups:
            group.security_groups, _ = self._terms("security-group", groups)
        profile = data.get("IamInstanceProfile") or {}
        if profile.get("Name") or profile.get("Arn"):
            group.instance_profile = profile.get("Name") or profile["Arn"].rsplit("/", 1)[-1]
            group.role = None

    # --- EKS managed node groups ----------------------------------------------------------

    def managed(self, cluster: str, name: str) -> NodeGroup | None:
        try:
            found = self.eks.describe_nodegroup(clusterName=cluster, nodegroupName=name)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                return None
            raise ConversionError(f"eks:DescribeNodegroup {cluster}/{name}: {error}") from None
        ng = found["nodegroup"]
        where = f"EKS node group {cluster}/{name}"
        scaling = ng.get("scalingConfig") or {}
        subnets, zones = self._terms("subnet", ng["subnets"])
        ami_type = ng.get("amiType") or "AL2023_x86_64_STANDARD"
        alias_family, device = next(
            ((f, d) for p, f, d in AMI_TYPES if ami_type.startswith(p)), (None, "/dev/xvda")
        )
        group = NodeGroup(
            name=name,
            source=where,
            instance_types=list(ng.get("instanceTypes") or []),
            max_size=int(scaling.get("maxSize") or 1),
            min_size=int(scaling.get("minSize") or 0),
            capacity_type="spot" if ng.get("capacityType") == "SPOT" else "on-demand",
            zones=zones,
            subnets=subnets,
            labels=dict(ng.get("labels") or {}),
            taints=[
                Taint(t["key"], EFFECTS.get(t["effect"], t["effect"]), t.get("value"))
                for t in ng.get("taints") or []
            ],
            gpu="GPU" in ami_type or "NVIDIA" in ami_type,
            role=str(ng["nodeRole"]).rsplit("/", 1)[-1],
        )
        if alias_family is not None:
            group.ami_alias = f"{alias_family}@{_alias_version(ng.get('releaseVersion'))}"
        if ng.get("diskSize"):
            group.root_volume = RootVolume(size_gib=int(ng["diskSize"]), device_name=device)
        if ng.get("launchTemplate"):
            data = self.launch_template(ng["launchTemplate"])
            if not group.instance_types and data.get("InstanceType"):
                group.instance_types = [data["InstanceType"]]
            self._from_template(group, data)
            group.instance_profile = None  # EKS sets the profile from nodeRole
            group.role = str(ng["nodeRole"]).rsplit("/", 1)[-1]
        if not group.security_groups:
            vpc = self.eks.describe_cluster(name=cluster)["cluster"]["resourcesVpcConfig"]
            ids = [vpc["clusterSecurityGroupId"]] if vpc.get("clusterSecurityGroupId") else []
            ids = ids or list(vpc.get("securityGroupIds") or [])
            if ids:
                group.security_groups, _ = self._terms("security-group", ids)
            group.notes.append(
                f"{where}: no launch template security groups: selected the cluster's "
                "security group, as EKS does for the node group"
            )
        _note_min(group)
        return group

    # --- self-managed Auto Scaling groups -------------------------------------------------

    def self_managed(self, name: str) -> NodeGroup | None:
        found = self.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[name])
        if not found["AutoScalingGroups"]:
            return None
        asg = found["AutoScalingGroups"][0]
        where = f"Auto Scaling group {name}"
        mixed = asg.get("MixedInstancesPolicy") or {}
        spec = asg.get("LaunchTemplate") or (mixed.get("LaunchTemplate") or {}).get(
            "LaunchTemplateSpecification"
        )
        if not spec:
            raise ConversionError(
                f"{where}: it uses a launch configuration, which convert does not read: "
                "move it to a launch template (aws autoscaling update-auto-scaling-group "
                "--launch-template ...) or write the EC2NodeClass by hand"
            )
        data = self.launch_template(spec)
        overrides = (mixed.get("LaunchTemplate") or {}).get("Overrides") or []
        types = [o["InstanceType"] for o in overrides if o.get("InstanceType")]
        types = types or ([data["InstanceType"]] if data.get("InstanceType") else [])
        distribution = mixed.get("InstancesDistribution") or {}
        spot = bool(mixed) and distribution.get("OnDemandPercentageAboveBaseCapacity", 100) == 0
        subnet_ids = [s for s in (asg.get("VPCZoneIdentifier") or "").split(",") if s]
        subnets, zones = self._terms("subnet", subnet_ids) if subnet_ids else ([], [])
        tags = {t["Key"]: t["Value"] for t in asg.get("Tags") or []}
        group = NodeGroup(
            name=name,
            source=where,
            instance_types=types,
            max_size=int(asg["MaxSize"]),
            min_size=int(asg["MinSize"]),
            capacity_type="spot" if spot else "on-demand",
            zones=zones or sorted(asg.get("AvailabilityZones") or []),
            subnets=subnets,
            labels={k[len(LABEL_TAG) :]: v for k, v in tags.items() if k.startswith(LABEL_TAG)},
            taints=[
                _asg_taint(k[len(TAINT_TAG) :], v)
                for k, v in tags.items()
                if k.startswith(TAINT_TAG)
            ],
        )
        self._from_template(group, data)
        group.gpu = any(t.key == "nvidia.com/gpu" for t in group.taints)
        _note_min(group)
        return group

    def read(self, cluster: str, name: str) -> NodeGroup:
        group = self.managed(cluster, name) or self.self_managed(name)
        if group is None:
            raise ConversionError(
                f"{name}: neither an EKS managed node group of cluster {cluster} nor an Auto "
                "Scaling group (check --region and the name)"
            )
        if not group.instance_types:
            raise ConversionError(f"{group.source}: names no instance type")
        return group


def _alias_version(release: str | None) -> str:
    """EKS's releaseVersion (``1.31.2-20241121``) as an alias version (``v20241121``): the
    pool starts on the AMI release the group runs; ``latest`` when there is none."""
    found = re.fullmatch(r"[0-9.]+-([0-9]{8})", release or "")
    return f"v{found.group(1)}" if found else "latest"


def _asg_taint(key: str, value: str) -> Taint:
    """``value:Effect`` as Cluster Autoscaler's node-template taint tags write it."""
    text, _, effect = value.rpartition(":")
    return Taint(key, effect or "NoSchedule", text or None)


def _note_min(group: NodeGroup) -> None:
    if group.min_size:
        group.notes.append(
            f"{group.source}: minimum {group.min_size} has no NodePool equivalent: Karpenter "
            "provisions for pending pods; keep the group at its minimum until the pool has "
            "taken the load"
        )
