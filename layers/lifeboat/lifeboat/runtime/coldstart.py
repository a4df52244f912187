"""Import only what the Lambda uses of the ``kubernetes`` package.

``import kubernetes.client`` first runs ``kubernetes/__init__.py``, which imports the
kubeconfig loader (with its OAuth, exec-plugin and YAML machinery), the watch, stream,
dynamic-client, leader-election and informer packages: about 0.15 s of every cold start,
none of which the Lambda uses (it talks to EKS through the client's REST layer with a token
it mints itself: ``lifeboat.kube.rest.RestClient``, ``lifeboat.kube.eks_auth``). Likewise
``kubernetes.client.rest`` needs ``kubernetes.utils.retry``, and
``kubernetes/utils/__init__.py`` imports PyYAML for its ``create_from_yaml``.
:func:`import_kubernetes_client_only` registers both packages without running those files,
so importing ``kubernetes.client`` (the generated client, itself lazy since kubernetes 32)
costs only what it needs. Any other submodule still imports on demand
(``from kubernetes import config`` works as before); what is lost is only the packages'
top-level re-exports, which nothing in the layer uses.

Called once, first thing, by the Lambda entry point; replay and the tests import the package
normally.
"""

from __future__ import annotations

import importlib.util
import sys

# Packages registered without running their __init__, parents first.
LEAN_PACKAGES = ("kubernetes", "kubernetes.utils")


def import_kubernetes_client_only() -> bool:
    """Register :data:`LEAN_PACKAGES` without their ``__init__``; False if ``kubernetes``
    was imported already (or is not installed), in which case nothing changes."""
    if "kubernetes" in sys.modules:
        return False
    for name in LEAN_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.submodule_search_locations is None:
            return False
        package = importlib.util.module_from_spec(spec)  # created, deliberately not executed
        sys.modules[name] = package
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, package)
    return True
