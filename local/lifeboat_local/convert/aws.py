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

from lifeboat_local.convert import mixed
from lifeboat_local.convert.capacity import Capacity, from_describe
from lifeboat_local.convert.mixed import capacity_type
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
    ("amazon-eks-arm64-node-", "AL2"),
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
        version = ask["Versions"][0]
        named = f"launch template {template_id or ask['LaunchTemplateName']} version {version!r}"
        try:
            versions = self.ec2.describe_launch_template_versions(**ask)["LaunchTemplateVersions"]
        except ClientError as error:  # a version deleted since, a template gone, no access
            code = error.response.get("Error", {}).get("Code", "")
            raise ConversionError(
                f"{named}: cannot be read ({code}): the group launches from a version that "
                "is gone; point it at an existing version, or write the class by hand"
            ) from None
        if not versions:
            raise ConversionError(f"{named}: no such version")
        data: dict[str, Any] = versions[0]["LaunchTemplateData"]
        return data

    def image(self, image_id: str) -> dict[str, Any]:
        """DescribeImages of one AMI ({} when it is gone)."""
        images = self.ec2.describe_images(ImageIds=[image_id])["Images"]
        return dict(images[0]) if images else {}

    def _ami_family(self, image_id: str, where: str) -> str:
        name = self.image(image_id).get("Name", "")
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
            group.alias_family = group.ami_family.lower()  # what --ami-alias latest follows
            group.ami_alias = None
            group.ami_arches = mixed.one_ami_per_arch(
                group,
                {group.ami_id: list(group.instance_types)},
                {group.ami_id: self.image(group.ami_id)},
            )
        self._volumes(group, data.get("BlockDeviceMappings") or [])
        self._metadata(group, data)
        groups = list(data.get("SecurityGroupIds") or [])
        for interface in data.get("NetworkInterfaces") or []:
            groups += interface.get("Groups") or []
        if groups:
            group.security_groups, _ = self._terms("security-group", groups)
        profile = data.get("IamInstanceProfile") or {}
        if profile.get("Name") or profile.get("Arn"):
            group.instance_profile = profile.get("Name") or profile["Arn"].rsplit("/", 1)[-1]
            group.role = None

    def _volumes(self, group: NodeGroup, mappings: list[dict[str, Any]]) -> None:
        """The template's EBS volumes, the one holding kubelet's ephemeral storage marked
        ``rootVolume`` (the AMI's root device; Bottlerocket's data volume, /dev/xvdb), the
        others carried as they are: listing any replaces Karpenter's defaults."""
        if group.ami_family == "Bottlerocket" or group.alias_family == "bottlerocket":
            ephemeral = "/dev/xvdb"
        else:
            image = self.image(group.ami_id) if group.ami_id else {}
            ephemeral = str(image.get("RootDeviceName") or "/dev/xvda")
        root, others = volumes(mappings, group.source, ephemeral)
        if root is not None or others:
            group.root_volume, group.more_volumes = root, others
        if mappings and root is None:
            group.notes.append(
                f"{group.source}: the launch template does not size {ephemeral}, the "
                "volume of the nodes' ephemeral storage: the AMI's size applies"
            )

    def _metadata(self, group: NodeGroup, data: dict[str, Any]) -> None:
        """The instance metadata options the group's instances got: the launch template's;
        without them, EC2's for the AMI (an AMI registered with ``ImdsSupport: v2.0`` gets
        IMDSv2 required and hop limit 2: EC2 "Configure the instance metadata options for
        new instances"); Karpenter's own defaults (hop limit 1) would cut pods off IMDS."""
        options = metadata_options(data.get("MetadataOptions") or {})
        image = self.image(group.ami_id) if group.ami_id else {}
        if not options and image.get("ImdsSupport") == "v2.0":
            options = {"httpTokens": "required", "httpPutResponseHopLimit": 2}
        if options:
            group.metadata_options = options
            return
        group.notes.append(
            f"{group.source}: the launch template sets no metadata options: Karpenter's "
            "defaults apply (IMDSv2 required, hop limit 1: pods without host networking "
            "cannot reach IMDS); set metadataOptions.httpPutResponseHopLimit: 2 if they must"
        )

    def _eks_metadata(self, group: NodeGroup, ng: dict[str, Any]) -> None:
        """A node group without a launch template runs on the one EKS made for it (in the
        account, on the group's Auto Scaling group): its metadata options are carried."""
        names = [a["name"] for a in (ng.get("resources") or {}).get("autoScalingGroups") or []]
        try:
            found = (
                self.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=names[:1])
                if names
                else {}
            )
            for asg in found.get("AutoScalingGroups") or []:
                spec = asg.get("LaunchTemplate") or (
                    (asg.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}
                ).get("LaunchTemplateSpecification")
                options = metadata_options(
                    (self.launch_template(spec) if spec else {}).get("MetadataOptions") or {}
                )
                if options:
                    group.metadata_options = options
                    return
        except (ClientError, ConversionError):  # e.g. not allowed to read it: said below
            pass
        group.notes.append(
            f"{group.source}: the metadata options of EKS's launch template for the group "
            "were not found: Karpenter's defaults apply (IMDSv2 required, hop limit 1: pods "
            "without host networking cannot reach IMDS); set "
            "metadataOptions.httpPutResponseHopLimit: 2 if they must"
        )

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
        version = _alias_version(alias_family or "", ng.get("releaseVersion"))
        if alias_family is not None and version is not None:
            group.ami_alias = f"{alias_family}@{version}"
        if alias_family is not None:
            group.alias_family = alias_family  # what --ami-alias latest follows
        if ng.get("diskSize"):
            group.root_volume = RootVolume(size_gib=int(ng["diskSize"]), device_name=device)
        if ng.get("launchTemplate"):
            data = self.launch_template(ng["launchTemplate"])
            if not group.instance_types and data.get("InstanceType"):
                group.instance_types = [data["InstanceType"]]
            self._from_template(group, data)
            group.instance_profile = None  # EKS sets the profile from nodeRole
            group.role = str(ng["nodeRole"]).rsplit("/", 1)[-1]
        else:
            self._eks_metadata(group, ng)
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
        policy = asg.get("MixedInstancesPolicy") or {}
        spec = asg.get("LaunchTemplate") or (policy.get("LaunchTemplate") or {}).get(
            "LaunchTemplateSpecification"
        )
        if not spec:
            raise ConversionError(
                f"{where}: it uses a launch configuration, which convert does not read: "
                "move it to a launch template (aws autoscaling update-auto-scaling-group "
                "--launch-template ...) or write the EC2NodeClass by hand"
            )
        data = self.launch_template(spec)
        overrides = (policy.get("LaunchTemplate") or {}).get("Overrides") or []
        types = [o["InstanceType"] for o in overrides if o.get("InstanceType")]
        types = types or ([data["InstanceType"]] if data.get("InstanceType") else [])
        subnet_ids = [s for s in (asg.get("VPCZoneIdentifier") or "").split(",") if s]
        subnets, zones = self._terms("subnet", subnet_ids) if subnet_ids else ([], [])
        tags = {t["Key"]: t["Value"] for t in asg.get("Tags") or []}
        group = NodeGroup(
            name=name,
            source=where,
            instance_types=types,
            max_size=int(asg["MaxSize"]),
            min_size=int(asg["MinSize"]),
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
        self._override_templates(group, data, overrides)
        capacity_type(group, policy)
        group.gpu = any(t.key == "nvidia.com/gpu" for t in group.taints)
        _note_min(group)
        return group

    def _override_templates(
        self, group: NodeGroup, data: dict[str, Any], overrides: list[dict[str, Any]]
    ) -> None:
        """Overrides with their own launch template: their AMIs join the class, one per
        architecture; anything else they change is refused, naming the types."""
        own = [o for o in overrides if o.get("LaunchTemplateSpecification")]
        if not own:
            return
        if not group.ami_id:
            raise ConversionError(
                f"{group.source}: {', '.join(o.get('InstanceType', '?') for o in own)} have "
                "their own launch templates and the group's names no AMI: write the class by hand"
            )
        own_types = {o.get("InstanceType") for o in own}
        amis: dict[str, list[str]] = {
            group.ami_id: [t for t in group.instance_types if t not in own_types]
        }
        for override in own:
            other = self.launch_template(override["LaunchTemplateSpecification"])
            changed = mixed.differences(data, other)
            if changed:
                raise ConversionError(
                    f"{group.source}: {override.get('InstanceType')}'s own launch template "
                    f"differs from the group's in {', '.join(changed)}, which one EC2NodeClass "
                    "cannot vary by type: convert it as a separate pool"
                )
            ami = other.get("ImageId") or group.ami_id
            if self._ami_family(ami, group.source) != group.ami_family:
                raise ConversionError(
                    f"{group.source}: {override.get('InstanceType')}'s AMI {ami} is not of "
                    f"the group's family ({group.ami_family}): convert it as a separate pool"
                )
            amis.setdefault(ami, []).append(str(override.get("InstanceType")))
        amis = {ami: types for ami, types in amis.items() if types}
        group.ami_arches = mixed.one_ami_per_arch(
            group, amis, {ami: self.image(ami) for ami in amis}
        )
        ids = sorted(set(group.ami_arches.values()))
        group.ami_id, group.more_ami_ids = ids[0], ids[1:]

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


def _volume(mapping: dict[str, Any]) -> RootVolume:
    """One EBS mapping: its size, type, performance, encryption and KMS key (``Ebs.KmsKeyId``,
    Karpenter's ``kmsKeyID``)."""
    ebs = mapping["Ebs"]
    return RootVolume(
        size_gib=int(ebs["VolumeSize"]),
        volume_type=ebs.get("VolumeType", "gp3"),
        iops=ebs.get("Iops"),
        throughput=ebs.get("Throughput"),
        device_name=mapping["DeviceName"],
        encrypted=ebs.get("Encrypted"),
        kms_key_id=ebs.get("KmsKeyId"),
    )


def volumes(
    mappings: list[dict[str, Any]], where: str, ephemeral: str
) -> tuple[RootVolume | None, list[RootVolume]]:
    """(the volume of device ``ephemeral``, the template's other EBS volumes with a size);
    a device named twice is refused (EC2 would refuse the launch). Instance store and
    ``NoDevice`` entries are not EBS volumes: Karpenter's class has no field for them."""
    names = [str(m.get("DeviceName")) for m in mappings]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConversionError(
            f"{where}: the launch template maps {', '.join(twice)} more than once: fix the "
            "template (one mapping per device) before converting it"
        )
    found = [_volume(m) for m in mappings if "VolumeSize" in (m.get("Ebs") or {})]
    root = next((v for v in found if v.device_name == ephemeral), None)
    return root, [v for v in found if v is not root]


# Launch template MetadataOptions -> EC2NodeClass metadataOptions (karpenter-provider-aws
# pkg/apis/v1/ec2nodeclass.go MetadataOptions; its defaults, hop limit 1 among them, apply to
# whatever is not written, so everything the template says is carried).
_METADATA_KEYS = (
    ("HttpEndpoint", "httpEndpoint"),
    ("HttpProtocolIpv6", "httpProtocolIPv6"),
    ("HttpPutResponseHopLimit", "httpPutResponseHopLimit"),
    ("HttpTokens", "httpTokens"),
)


def metadata_options(options: dict[str, Any]) -> dict[str, object]:
    carried: dict[str, object] = {}
    for aws_key, karpenter_key in _METADATA_KEYS:
        value = options.get(aws_key)
        if value is None or value == -1:  # -1: "no preference" in ModifyInstanceMetadata
            continue
        carried[karpenter_key] = int(value) if aws_key == "HttpPutResponseHopLimit" else value
    return carried


def _alias_version(family: str, release: str | None) -> str | None:
    """EKS's releaseVersion as the alias version of the release the group runs:
    ``1.31.2-20241121`` -> ``v20241121`` (AL2, AL2023), ``1.20.3-5d9ac849`` -> ``v1.20.3``
    (Bottlerocket); None when it says none (Windows aliases take only ``latest``)."""
    if family.startswith("windows"):
        return None
    if family == "bottlerocket":
        found = re.fullmatch(r"([0-9]+\.[0-9]+\.[0-9]+)-[0-9a-f]+", release or "")
    else:
        found = re.fullmatch(r"[0-9.]+-([0-9]{8})", release or "")
    return f"v{found.group(1)}" if found else None


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
