"""``convert.names`` and ``convert.labels``: a node group's name as a valid NodePool name
(a DNS subdomain that is also a label value, since Karpenter writes it as the
``karpenter.sh/nodepool`` label), and label keys and values against apimachinery's
``IsQualifiedName`` / ``IsValidLabelValue`` and Karpenter's restricted label domains
(kubernetes-sigs/karpenter pkg/apis/v1/labels.go ``IsRestrictedLabel``)."""

from __future__ import annotations

import hashlib

import pytest

from lifeboat_local.convert.labels import check_key, check_value
from lifeboat_local.convert.model import ConversionError
from lifeboat_local.convert.names import is_valid, pool_name


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:6]


def test_a_valid_name_is_kept() -> None:
    for name in ("workers", "a", "ng-1", "pool.v2", "x" * 63):
        assert is_valid(name) and pool_name(name) == name


def test_invalid_names_are_not_valid() -> None:
    for name in ("", "NG", "ng_1", "-ng", "ng-", "x" * 64, "a..b", "a.-b", ".a"):
        assert not is_valid(name), name


def test_an_invalid_name_is_mapped_with_a_hash_of_the_original() -> None:
    """Lower case, other characters ``-``, runs folded, ends trimmed, and the original's hash:
    ``ng_1``, ``ng-1`` and ``NG_1`` never share a pool."""
    assert pool_name("NG__1") == f"ng-1-{_digest('NG__1')}"
    assert pool_name("_ng_1_") == f"ng-1-{_digest('_ng_1_')}"
    assert len({pool_name("ng_1"), pool_name("ng-1"), pool_name("NG_1")}) == 3


def test_a_long_name_is_cut_to_63_with_its_hash_and_no_dash_before_it() -> None:
    long = "A" * 55 + "-" + "b" * 20
    mapped = pool_name(long)
    assert len(mapped) <= 63 and is_valid(mapped)
    assert mapped == ("a" * 55 + "-b")[:56].rstrip("-") + "-" + _digest(long)
    assert pool_name("Q" * 80) == "q" * 56 + "-" + _digest("Q" * 80)


def test_a_name_with_nothing_left_gets_a_generic_one() -> None:
    assert pool_name("___") == f"node-group-{_digest('___')}"


@pytest.mark.parametrize(
    "key",
    [
        "team",
        "example.com/team",
        "a_b.c-d",
        "x" * 63,
        "node.kubernetes.io/lifecycle",  # an exception to the kubernetes.io domain
        "kops.k8s.io/instancegroup",
        "sub.node-restriction.kubernetes.io/x",
        "kubernetes.io/arch",  # well known: Karpenter sets it from the instance
        "karpenter.sh/capacity-type",
    ],
)
def test_keys_the_api_server_and_karpenter_accept(key: str) -> None:
    check_key(key, "here")


@pytest.mark.parametrize(
    ("key", "fix"),
    [
        ("bad key", "'bad-key'"),
        ("-team-", "'team'"),
        ("x" * 64, repr("x" * 63)),
        ("Example.COM/team", "'example.com/team'"),
        ("ex_ample.com/team", "'ex-ample.com/team'"),
        ("a" * 254 + "/team", repr("a" * 253 + "/team")),
    ],
)
def test_a_key_over_kubernetes_limits_is_refused_with_a_fix(key: str, fix: str) -> None:
    with pytest.raises(ConversionError) as refused:
        check_key(key, "settings.yaml: labels")
    message = str(refused.value)
    assert message.startswith(f"settings.yaml: labels: label key {key!r}: ")
    assert message.endswith(f": use {fix}")


def test_the_problems_of_a_key_are_all_said() -> None:
    with pytest.raises(ConversionError) as refused:
        check_key("Bad Domain/bad key", "here")
    assert "the name part must be 1-63 characters" in str(refused.value)
    assert "the prefix must be a DNS subdomain (lower case, at most 253)" in str(refused.value)


@pytest.mark.parametrize(
    "key",
    [
        "kubernetes.io/role",
        "k8s.io/x",
        "karpenter.sh/custom",
        "team.karpenter.sh/x",
        "karpenter.k8s.aws/instance-family",
        "node-role.kubernetes.io/worker",
    ],
)
def test_a_key_in_a_domain_karpenter_reserves_is_refused(key: str) -> None:
    with pytest.raises(ConversionError, match="in a domain Karpenter reserves"):
        check_key(key, "here")


def test_a_domain_only_ending_like_a_reserved_one_is_not_reserved() -> None:
    check_key("notkarpenter.sh/x", "here")
    check_key("mykubernetes.io/x", "here")


def test_values() -> None:
    for value in ("", "a", "data-team_1.x", "x" * 63):
        check_value("team", value, "here")
    for value, fix in (("-x-", "'x'"), ("a b", "'a-b'"), ("x" * 64, repr("x" * 63))):
        with pytest.raises(ConversionError) as refused:
            check_value("team", value, "here")
        assert str(refused.value).startswith(f"here: label team={value!r}: a value must be")
        assert str(refused.value).endswith(f": use {fix}")
