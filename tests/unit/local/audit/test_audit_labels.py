"""Label checks over where labels live: metadata, templates, selectors, NodePool templates and
requirements, and the label values Karpenter derives from NodePool and node class names."""

from __future__ import annotations

from lifeboat_local.audit import labels

from .audit_builders import nodepool, pdb, pod, view, workload

LONG = "x" * 64


def messages(cluster_objects: list[dict[str, object]]) -> list[tuple[str, str]]:
    return [(str(i.object), i.message) for i in labels.invalid_labels(view(*cluster_objects))]


def test_metadata_label_value_over_63_bytes() -> None:
    [(obj, message)] = messages([pod("p", labels={"app": LONG})])
    assert obj == "Pod shop/p"
    assert message.startswith(
        f'metadata.labels: value "{LONG}" of "app": must be no more than 63 bytes'
    )


def test_template_and_selector_labels_of_workloads() -> None:
    dep = workload("Deployment", "api", labels={"app": "api", "Bad_Prefix.io/x": "y"})
    found = messages([dep])
    template = 'spec.template.metadata.labels: key "Bad_Prefix.io/x": prefix part a lowercase RFC'
    assert any(obj == "Deployment shop/api" and m.startswith(template) for obj, m in found)
    assert any(m.startswith('spec.selector.matchLabels: key "Bad_Prefix.io/x"') for _, m in found)


def test_pdb_selector_expressions() -> None:
    budget = pdb(
        "web",
        selector={
            "matchExpressions": [{"key": "a/b/c", "operator": "In", "values": ["ok", "-bad"]}]
        },
        maxUnavailable=1,
    )
    found = [m for _, m in messages([budget])]
    assert any(m.startswith('spec.selector.matchExpressions[0]: key "a/b/c"') for m in found)
    assert any(
        m.startswith('spec.selector.matchExpressions[0]: value "-bad" of "a/b/c"') for m in found
    )
    assert not any('value "ok"' in m for m in found)


def test_nodepool_name_becomes_a_label_value() -> None:
    """Karpenter labels every NodeClaim and Node karpenter.sh/nodepool=<name>; object names may
    be 253 characters, label values 63."""
    [(obj, message)] = messages([nodepool("p" * 64, [{"nodes": "1"}])])
    assert obj == f"NodePool {'p' * 64}"
    assert message.startswith("metadata.name (label karpenter.sh/nodepool on its nodes)")


def test_node_class_name_becomes_a_label_value() -> None:
    pool = nodepool(
        "general",
        [{"nodes": "1"}],
        spec={
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "c" * 70}
        },
    )
    [(_, message)] = messages([pool])
    assert message.startswith(
        "spec.template.spec.nodeClassRef.name (label karpenter.k8s.aws/ec2nodeclass on its nodes)"
    )


def test_nodepool_template_labels_and_requirement_values() -> None:
    pool = nodepool(
        "general",
        [{"nodes": "1"}],
        metadata={"labels": {"team": "platform", f"example.com/{LONG}": "x"}},
        spec={
            "requirements": [
                {"key": "example.com/tier", "operator": "In", "values": ["gold", "gold plated"]},
                {"key": "example.com/gen", "operator": "Gt", "values": ["5"]},
            ]
        },
    )
    found = [m for _, m in messages([pool])]
    assert any(
        m.startswith(
            f'spec.template.metadata.labels: key "example.com/{LONG}": name part must be no '
            "more than 63 bytes"
        )
        for m in found
    )
    assert any(
        m.startswith('spec.template.spec.requirements[0]: value "gold plated"') for m in found
    )
    assert len(found) == 2


def test_karpenter_invalid_labels_in_nodepools_only() -> None:
    pool = nodepool(
        "general",
        [{"nodes": "1"}],
        metadata={
            "labels": {"karpenter.sh/nodepool": "other", "karpenter.sh/capacity-type": "spot"}
        },
        spec={
            "requirements": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["a", "b"]},
                {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7i"]},
            ]
        },
    )
    node_with_karpenter_labels = pod("p", labels={"karpenter.sh/nodepool": "general"})
    issues = list(labels.karpenter_invalid_labels(view(pool, node_with_karpenter_labels)))
    assert [i.message for i in issues] == [
        'spec.template.metadata.labels: key "karpenter.sh/nodepool": '
        'label "karpenter.sh/nodepool" is restricted (Karpenter sets it)',
        'spec.template.spec.requirements[0]: key "kubernetes.io/hostname": '
        'label "kubernetes.io/hostname" is restricted',
    ]


def test_valid_labels_are_quiet() -> None:
    assert (
        messages(
            [
                pod("p", labels={"app.kubernetes.io/name": "web", "tier": ""}),
                nodepool("general", [{"nodes": "1"}]),
            ]
        )
        == []
    )


def test_requirements_karpenter_refuses() -> None:
    """A capacity type Karpenter does not know: NodePool validation fails, nothing provisions."""
    requirements = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["Spot"]}]
    pool = nodepool("general", [{"nodes": "1"}], spec={"requirements": requirements})
    [issue] = labels.karpenter_invalid_labels(view(pool))
    assert issue.message.startswith(
        'spec.template.spec.requirements[0]: key "karpenter.sh/capacity-type": no valid value'
    )
