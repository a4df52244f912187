"""Label selectors as Kubernetes objects carry them (``metav1.LabelSelector``): which labels
a PodDisruptionBudget, a workload or a node selector picks."""

from __future__ import annotations

from collections.abc import Mapping

from lifeboat.model.objects import Obj


def selector_matches(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector semantics (policy/v1): none matches nothing, {} matches all."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != str(value):
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = {str(v) for v in expression.get("values") or []}
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            return False  # the API server rejects it; match nothing rather than everything
    return True
