"""Karpenter v1's NodeClaim and NodePool rules, as the API server enforces the CRDs.

Written here from the CRDs of kubernetes-sigs/karpenter (``pkg/apis/crds/karpenter.sh_*.yaml``,
generated from the kubebuilder markers of ``pkg/apis/v1``); each check names the CRD field
path or CEL rule it mirrors. A broken rule is a 422 Invalid naming the field, as the API
server answers for a CRD; unknown fields follow ``fieldValidation`` like the built-in kinds
(structural pruning drops them otherwise). Defaults the CRDs declare are applied on write.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

from .crd_checks import StructuralChecker
from .errors import ApiError, bad_request
from .resources import NODECLAIMS, NODEPOOLS, Obj, ResourceType
from .verdict import Verdict

# requirements[].key, taints[].key: a label key (qualified name with an optional prefix).
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUANTITY = re.compile(
    r"^[+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_EXPIRE_AFTER = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")  # spec.expireAfter, consolidateAfter
_GRACE = re.compile(r"^([0-9]+(s|m|h))+$")  # spec.terminationGracePeriod
_BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")  # budgets[].nodes
_BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")  # budgets[].duration
_BUDGET_SCHEDULE = re.compile(
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
)
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
REASONS = ("Underutilized", "Empty", "Drifted")
POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
# Label keys under the karpenter.sh domain that requirements may still name.
_ALLOWED_KARPENTER_KEYS = ("karpenter.sh/capacity-type", "karpenter.sh/nodepool")

_FIELDS: dict[str, frozenset[str]] = {
    "nodeclaim": frozenset({"apiVersion", "kind", "metadata", "spec", "status"}),
    "claim.spec": frozenset(
        {
            "expireAfter",
            "nodeClassRef",
            "requirements",
            "resources",
            "startupTaints",
            "taints",
            "terminationGracePeriod",
        }
    ),
    "nodeClassRef": frozenset({"group", "kind", "name"}),
    "requirement": frozenset({"key", "minValues", "operator", "values"}),
    "resources": frozenset({"requests"}),
    "taint": frozenset({"effect", "key", "timeAdded", "value"}),
    "pool.spec": frozenset({"disruption", "limits", "replicas", "template", "weight"}),
    "disruption": frozenset({"budgets", "consolidateAfter", "consolidationPolicy"}),
    "budget": frozenset({"duration", "nodes", "reasons", "schedule"}),
    "template": frozenset({"metadata", "spec"}),
    "template.metadata": frozenset({"annotations", "labels"}),
    "template.spec": frozenset(
        {
            "expireAfter",
            "nodeClassRef",
            "requirements",
            "startupTaints",
            "taints",
            "terminationGracePeriod",
        }
    ),
}


class _Checker(StructuralChecker):
    def __init__(self, resource: ResourceType, obj: Obj) -> None:
        super().__init__(resource, obj, _FIELDS)

    # --- shared parts of the two kinds ----------------------------------------------------

    def node_class_ref(self, ref: Any, path: str) -> None:
        ref = self.mapping(ref, path, "nodeClassRef", ("group", "kind", "name"))
        # nodeClassRef.group: pattern ^[^/]*$; group, kind, name: CEL `self != ''`.
        self.string(ref["group"], f"{path}.group", re.compile(r"^[^/]*$"))
        for key in ("group", "kind", "name"):
            if self.string(ref[key], f"{path}.{key}") == "":
                raise self.fail(f"{path}.{key}", f'Invalid value: "string": {key} may not be empty')

    def requirements(self, value: Any, path: str, pool: bool) -> None:
        # requirements: maxItems 100, and the list-level CEL rules after the items.
        items = self.array(value, path, max_items=100)
        for index, requirement in enumerate(items):
            where = f"{path}[{index}]"
            requirement = self.mapping(requirement, where, "requirement", ("key", "operator"))
            key = self.string(requirement["key"], f"{where}.key", _LABEL_KEY)
            if len(key) > 316:
                raise self.fail(f"{where}.key", "Too long: may not be longer than 316")
            # key CEL: the karpenter.sh domain is restricted but for two keys; no hostname;
            # in a NodePool the nodepool key itself is restricted too.
            domain = key.split("/", 1)[0] if "/" in key else ""
            if domain.endswith("karpenter.sh") and key not in _ALLOWED_KARPENTER_KEYS:
                raise self.fail(
                    f"{where}.key",
                    f'Invalid value: "string": label domain "karpenter.sh" is restricted ({key})',
                )
            if key == "kubernetes.io/hostname" or (pool and key == "karpenter.sh/nodepool"):
                raise self.fail(
                    f"{where}.key", f'Invalid value: "string": label "{key}" is restricted'
                )
            self.enum(requirement["operator"], f"{where}.operator", OPERATORS)
            for value_index, item in enumerate(
                self.array(requirement.get("values"), f"{where}.values")
            ):
                self.string(item, f"{where}.values[{value_index}]")
            if "minValues" in requirement:
                self.integer(requirement["minValues"], f"{where}.minValues", 1, 50)
        for index, requirement in enumerate(items):
            operator, values = requirement["operator"], requirement.get("values") or []
            # CEL: operator In must have a value defined.
            if operator == "In" and not values:
                raise self.fail(
                    path,
                    f'Invalid value: "array": requirements[{index}] with operator In must have'
                    " a value defined",
                )
            # CEL: Gt, Lt, Gte, Lte take a single non-negative integer value.
            if operator in ("Gt", "Lt", "Gte", "Lte") and not (
                len(values) == 1 and re.fullmatch(r"[+]?[0-9]+", values[0])
            ):
                raise self.fail(
                    path,
                    f'Invalid value: "array": requirements[{index}] with operator {operator}'
                    " must have a single positive integer value",
                )
            # CEL: an In requirement with minValues has at least minValues values.
            if (
                operator == "In"
                and "minValues" in requirement
                and len(values) < requirement["minValues"]
            ):
                raise self.fail(
                    path,
                    f'Invalid value: "array": requirements[{index}] ({requirement["key"]}) has'
                    f" {len(values)} value(s), fewer than its minValues {requirement['minValues']}",
                )

    def taints(self, value: Any, path: str) -> None:
        for index, taint in enumerate(self.array(value, path)):
            where = f"{path}[{index}]"
            taint = self.mapping(taint, where, "taint", ("effect", "key"))
            if self.string(taint["key"], f"{where}.key", _LABEL_KEY) == "":
                raise self.fail(
                    f"{where}.key", 'Invalid value: "": should be at least 1 chars long'
                )
            self.enum(taint["effect"], f"{where}.effect", TAINT_EFFECTS)
            if "value" in taint:
                self.string(taint["value"], f"{where}.value", _LABEL_KEY)

    def durations(self, spec: Obj, path: str) -> None:
        if "expireAfter" in spec:
            self.string(spec["expireAfter"], f"{path}.expireAfter", _EXPIRE_AFTER)
        if "terminationGracePeriod" in spec:
            self.string(spec["terminationGracePeriod"], f"{path}.terminationGracePeriod", _GRACE)

    def quantities(self, value: Any, path: str) -> None:
        for key, quantity in (value or {}).items():
            if (
                isinstance(quantity, bool)
                or not isinstance(quantity, (int, str))
                or (isinstance(quantity, str) and not _QUANTITY.match(quantity))
            ):
                raise self.fail(
                    f"{path}.{key}", f"Invalid value: {json.dumps(quantity)}: must be a quantity"
                )


def _nodeclaim(checker: _Checker, obj: Obj) -> None:
    spec = checker.mapping(obj.get("spec"), "spec", "claim.spec", ("nodeClassRef", "requirements"))
    spec.setdefault("expireAfter", "720h")  # spec.expireAfter default
    checker.node_class_ref(spec["nodeClassRef"], "spec.nodeClassRef")
    checker.requirements(spec["requirements"], "spec.requirements", pool=False)
    checker.taints(spec.get("taints"), "spec.taints")
    checker.taints(spec.get("startupTaints"), "spec.startupTaints")
    checker.durations(spec, "spec")
    resources = checker.mapping(spec.get("resources"), "spec.resources", "resources")
    checker.quantities(resources.get("requests"), "spec.resources.requests")


def _nodepool(checker: _Checker, obj: Obj) -> None:
    spec = checker.mapping(obj.get("spec"), "spec", "pool.spec", ("template",))
    _pool_template(checker, spec)
    _pool_disruption(checker, spec)
    checker.quantities(spec.get("limits"), "spec.limits")
    _pool_weight_and_replicas(checker, spec)


def _pool_template(checker: _Checker, spec: Obj) -> None:
    """Check ``spec.template`` (its labels, then its spec), defaulting ``expireAfter``."""
    template = checker.mapping(spec["template"], "spec.template", "template", ("spec",))
    metadata = checker.mapping(
        template.get("metadata"), "spec.template.metadata", "template.metadata"
    )
    _template_labels(checker, metadata.get("labels") or {})
    tspec = checker.mapping(
        template["spec"], "spec.template.spec", "template.spec", ("nodeClassRef", "requirements")
    )
    tspec.setdefault("expireAfter", "720h")
    checker.node_class_ref(tspec["nodeClassRef"], "spec.template.spec.nodeClassRef")
    checker.requirements(tspec["requirements"], "spec.template.spec.requirements", pool=True)
    checker.taints(tspec.get("taints"), "spec.template.spec.taints")
    checker.taints(tspec.get("startupTaints"), "spec.template.spec.startupTaints")
    checker.durations(tspec, "spec.template.spec")


def _template_labels(checker: _Checker, labels: Obj) -> None:
    """Check ``spec.template.metadata.labels``: at most 100, valid values, and none of the
    keys Karpenter keeps for itself."""
    if len(labels) > 100:  # template.metadata.labels: maxProperties 100
        raise checker.fail("spec.template.metadata.labels", "Too many: must have at most 100 items")
    for key, value in labels.items():
        where = f"spec.template.metadata.labels.{key}"
        checker.string(value, where, _LABEL_VALUE)
        if len(value) > 63:
            raise checker.fail(where, "Too long: may not be longer than 63")
        domain = key.split("/", 1)[0] if "/" in key else ""
        restricted = domain.endswith("karpenter.sh") and key not in _ALLOWED_KARPENTER_KEYS
        if restricted or key in ("karpenter.sh/nodepool", "kubernetes.io/hostname"):
            raise checker.fail(
                "spec.template.metadata.labels",
                f'Invalid value: "object": label "{key}" is restricted',
            )


def _pool_disruption(checker: _Checker, spec: Obj) -> None:
    """Check ``spec.disruption``, filling in the CRD's defaults (consolidation after 0s when
    empty or underutilized, one budget of 10% of nodes)."""
    disruption = checker.mapping(spec.setdefault("disruption", {}), "spec.disruption", "disruption")
    disruption.setdefault("consolidateAfter", "0s")
    disruption.setdefault("consolidationPolicy", "WhenEmptyOrUnderutilized")
    checker.string(
        disruption["consolidateAfter"], "spec.disruption.consolidateAfter", _EXPIRE_AFTER
    )
    checker.enum(disruption["consolidationPolicy"], "spec.disruption.consolidationPolicy", POLICIES)
    budgets = checker.array(
        disruption.setdefault("budgets", [{"nodes": "10%"}]), "spec.disruption.budgets", 50
    )
    for index, budget in enumerate(budgets):
        _budget(checker, budget, f"spec.disruption.budgets[{index}]")


def _budget(checker: _Checker, value: Any, where: str) -> None:
    """Check one disruption budget (``where`` is its path), defaulting ``nodes`` to 10%."""
    budget = checker.mapping(value, where, "budget")
    budget.setdefault("nodes", "10%")
    checker.string(budget["nodes"], f"{where}.nodes", _BUDGET_NODES)
    if "schedule" in budget:
        checker.string(budget["schedule"], f"{where}.schedule", _BUDGET_SCHEDULE)
    if "duration" in budget:
        checker.string(budget["duration"], f"{where}.duration", _BUDGET_DURATION)
    for reason_index, reason in enumerate(
        checker.array(budget.get("reasons"), f"{where}.reasons", 50)
    ):
        checker.enum(reason, f"{where}.reasons[{reason_index}]", REASONS)
    # budgets CEL: 'schedule' must be set with 'duration' (and the other way round).
    if ("schedule" in budget) != ("duration" in budget):
        raise checker.fail(
            "spec.disruption.budgets",
            "Invalid value: \"array\": 'schedule' must be set with 'duration'",
        )


def _pool_weight_and_replicas(checker: _Checker, spec: Obj) -> None:
    """Check ``spec.weight`` and ``spec.replicas``, and that a static NodePool (one with
    replicas) has no weight and limits only nodes."""
    if "weight" in spec:
        checker.integer(spec["weight"], "spec.weight", 1, 100)
    if "replicas" in spec:
        checker.integer(spec["replicas"], "spec.replicas", 0, None)
        # spec CEL: a static NodePool takes only limits.nodes, and no weight.
        if set(spec.get("limits") or {}) - {"nodes"}:
            raise checker.fail(
                "spec",
                "Invalid value: \"object\": only 'limits.nodes' is supported on static NodePools",
            )
        if "weight" in spec:
            raise checker.fail(
                "spec", "Invalid value: \"object\": 'weight' is not supported on static NodePools"
            )


def check(resource: ResourceType, obj: Obj, mode: str) -> Verdict:
    """Validates and defaults ``obj`` in place; returns the validation Verdict."""
    checker = _Checker(resource, obj)
    if "spec" not in obj:
        raise checker.fail("spec", "Required value")
    for key in obj:
        if key not in _FIELDS["nodeclaim"]:
            checker.unknown.append((obj, key, key))
    (_nodeclaim if resource is NODECLAIMS else _nodepool)(checker, obj)
    if checker.unknown and mode == "Strict":
        listed = ", ".join(f'unknown field "{path}"' for _, _, path in checker.unknown)
        raise bad_request(f"strict decoding error: {listed}")
    for holder, key, _ in checker.unknown:
        holder.pop(key, None)
    warnings = (
        [f'unknown field "{path}"' for _, _, path in checker.unknown] if mode == "Warn" else []
    )
    return Verdict(obj, warnings)


def _defaulted(resource: ResourceType, obj: Obj) -> Obj:
    """``obj`` with the CRD's defaults, as the server reads it back from storage."""
    copied: Obj = json.loads(json.dumps(obj))
    # Stored before these rules were checked (a cluster file): compared as it is.
    with contextlib.suppress(ApiError):
        check(resource, copied, "Ignore")
    return copied


def check_update(resource: ResourceType, old: Obj, new: Obj) -> None:
    """The transition rules (CEL with ``oldSelf``)."""
    checker = _Checker(resource, new)
    old = _defaulted(resource, old)
    if resource is NODECLAIMS and old.get("spec") != new.get("spec"):
        # NodeClaim spec: `self == oldSelf`.
        raise checker.fail("spec", 'Invalid value: "object": spec is immutable')
    if resource is NODEPOOLS:
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        old_ref = ((old_spec.get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
        new_ref = ((new_spec.get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
        for key in ("group", "kind"):  # nodeClassRef: group and kind are immutable
            if old_ref.get(key) != new_ref.get(key):
                raise checker.fail(
                    "spec.template.spec.nodeClassRef",
                    f'Invalid value: "object": nodeClassRef.{key} is immutable',
                )
        # spec: no transition between static (replicas) and dynamic provisioning.
        if ("replicas" in old_spec) != ("replicas" in new_spec):
            raise checker.fail(
                "spec",
                'Invalid value: "object": cannot switch a NodePool between static (replicas)'
                " and dynamic provisioning",
            )


def openapi_schema(resource: ResourceType) -> Obj:
    """A structural schema of the kind for the OpenAPI document (the rules live above)."""
    spec_fields = _FIELDS["claim.spec" if resource is NODECLAIMS else "pool.spec"]
    return {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "properties": {
                    name: {"x-kubernetes-preserve-unknown-fields": True}
                    for name in sorted(spec_fields)
                },
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "x-kubernetes-group-version-kind": [
            {"group": "karpenter.sh", "version": "v1", "kind": resource.kind}
        ],
    }
