"""Label rules against Kubernetes' apimachinery (content.IsLabelKey behind IsQualifiedName,
content.IsLabelValue behind IsValidLabelValue) and Karpenter's NodePool CRD rules."""

from __future__ import annotations

import pytest

from lifeboat_local.audit.label_rules import (
    karpenter_key_problems,
    karpenter_requirement_problems,
    label_key_problems,
    label_value_problems,
)

NAME_63 = "a" * 63


@pytest.mark.parametrize(
    "key",
    [
        "app",
        "App.Name_1-x",
        "example.com/app",
        f"example.com/{NAME_63}",
        f"{'a' * 63}.{'b' * 63}.{'c' * 63}.{'d' * 61}/x",  # prefix of exactly 253 bytes
        "kubernetes.io/hostname",
        "1app",
    ],
)
def test_is_qualified_name_accepts(key: str) -> None:
    assert label_key_problems(key) == []


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        (f"example.com/{NAME_63}b", "name part must be no more than 63 bytes (has 64)"),
        ("a/b/c", "with an optional DNS subdomain prefix"),
        ("/app", "prefix part must be non-empty"),
        ("example.com/", "name part must be non-empty"),
        ("Example.com/app", "prefix part a lowercase RFC 1123 subdomain"),
        ("example_com/app", "prefix part a lowercase RFC 1123 subdomain"),
        (f"{'a' * 63}.{'b' * 63}.{'c' * 63}.{'d' * 62}/x", "prefix part must be no more than 253"),
        ("-app", "name part must consist of alphanumeric characters"),
        ("app-", "name part must consist of alphanumeric characters"),
        ("app\n", "name part must consist of alphanumeric characters"),  # Go's $ is end of text
        ("ünïcode", "name part must consist of alphanumeric characters"),
    ],
)
def test_is_qualified_name_refuses(key: str, problem: str) -> None:
    assert any(problem in p for p in label_key_problems(key)), label_key_problems(key)


def test_name_length_counts_bytes_as_go_len_does() -> None:
    problems = label_key_problems("é" * 32)  # 32 characters, 64 bytes
    assert "name part must be no more than 63 bytes (has 64)" in problems


@pytest.mark.parametrize("value", ["", "v", "a-b_c.d", NAME_63, "2026-12-01"])
def test_is_valid_label_value_accepts(value: str) -> None:
    assert label_value_problems(value) == []


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (NAME_63 + "a", "must be no more than 63 bytes (has 64)"),
        ("-v", "a valid label must be an empty string or consist of"),
        ("v.", "a valid label must be an empty string or consist of"),
        ("a b", "a valid label must be an empty string or consist of"),
        ("v\n", "a valid label must be an empty string or consist of"),
    ],
)
def test_is_valid_label_value_refuses(value: str, problem: str) -> None:
    assert any(problem in p for p in label_value_problems(value))


@pytest.mark.parametrize(
    "key",
    [
        "karpenter.sh/capacity-type",  # in the CRD rule's allow-list
        "karpenter.k8s.aws/instance-family",  # an AWS provider well-known label
        "karpenter.k8s.aws/instance-category",
        "topology.kubernetes.io/zone",
        "node.kubernetes.io/instance-type",
        "example.com/team",
        "team",
    ],
)
def test_karpenter_accepts(key: str) -> None:
    assert karpenter_key_problems(key) == []


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("karpenter.sh/nodepool", 'label "karpenter.sh/nodepool" is restricted'),
        ("kubernetes.io/hostname", 'label "kubernetes.io/hostname" is restricted'),
        ("karpenter.sh/team", 'label domain "karpenter.sh" is restricted'),
        ("sub.karpenter.sh/team", 'label domain "karpenter.sh" is restricted'),
        # The CRD rule is x.find("^([^/]+)").endsWith("karpenter.sh"): no dot needed...
        ("notkarpenter.sh/team", 'label domain "karpenter.sh" is restricted'),
        # ...and a key without a prefix is its own "domain".
        ("karpenter.sh", 'label domain "karpenter.sh" is restricted'),
        ("karpenter.k8s.aws/gpu-flavour", 'label domain "karpenter.k8s.aws" is restricted'),
    ],
)
def test_karpenter_restricted_domains_refuse(key: str, problem: str) -> None:
    assert karpenter_key_problems(key) == [problem] or karpenter_key_problems(key)[0].startswith(
        problem
    )


@pytest.mark.parametrize(
    ("requirement", "problem"),
    [
        ({"key": "k", "operator": "Equals", "values": ["a"]}, "operator 'Equals' is not one of"),
        ({"key": "k", "operator": "In", "values": []}, "operator 'In' must have a value defined"),
        ({"key": "k", "operator": "In", "values": ["a"], "minValues": 2}, "minValues 2 but only 1"),
        ({"key": "k", "operator": "Gt", "values": ["-1"]}, "single non-negative integer"),
        ({"key": "k", "operator": "Lte", "values": ["1", "2"]}, "single non-negative integer"),
        # validateWellKnownValues: no known value makes the NodePool not Ready.
        (
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["Spot"]},
            "no valid value in ['Spot'], expected one of ['on-demand', 'reserved', 'spot']",
        ),
        (
            {
                "key": "karpenter.k8s.aws/instance-tenancy",
                "operator": "In",
                "values": ["default", "host"],
                "minValues": 2,
            },
            "only 1 valid value(s) for minValues 2",
        ),
    ],
)
def test_karpenter_requirement_refused(requirement: dict[str, object], problem: str) -> None:
    assert any(problem in p for p in karpenter_requirement_problems(requirement))


@pytest.mark.parametrize(
    "requirement",
    [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "Spot"]},
        {"key": "karpenter.sh/capacity-type", "operator": "NotIn", "values": ["Spot"]},
        {"key": "k", "operator": "Gte", "values": ["4"]},
        {"key": "k", "operator": "Exists"},
        {"key": "k", "operator": "In", "values": ["a", "b"], "minValues": 2},
    ],
)
def test_karpenter_requirement_accepted(requirement: dict[str, object]) -> None:
    assert karpenter_requirement_problems(requirement) == []
