"""The stock kubectl's client-side validation against ``lifeboat serve`` (issue 38.3): with
its default ``--validate`` (strict), kubectl asks ``/openapi/v2`` for a ``kind: List`` (its
verifier never vouches for a List) and for any kind whose group version the v3 index lacks;
both answered 404 ("the server could not find the requested resource"), so ``kubectl apply``
of convert's List and of deploy/rbac.yaml failed unless validation was turned off. Now the
RBAC kinds are served (and in the v3 index), and ``/openapi/v2`` answers the protobuf
document client-go asks for; the items of a List are still checked, by the server, with the
``fieldValidation=Strict`` kubectl sends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliRun
from tests.integration.kubemu.test_kubectl import KUBECTL, Served, cluster_objects, start
from tests.integration.local.convert.test_convert import ISSUE_SETTINGS
from tests.support import cyaml
from tests.support.paths import ROOT

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
RBAC = ROOT / "deploy" / "rbac.yaml"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("served")
    cluster = folder / "cluster.yaml"
    cluster.write_text(cyaml.safe_dump_all(cluster_objects()))
    server = start(folder, "serve", "--cluster", str(cluster))
    yield server
    assert server.stop() == 0


def test_kubectl_apply_of_deploy_rbac_validates_and_creates_every_object(served: Served) -> None:
    applied = served.kubectl("apply", "-f", str(RBAC))
    kinds = [d["kind"] for d in cyaml.safe_load_all(RBAC.read_text()) if d]
    assert len(applied.stdout.splitlines()) == len(kinds)
    assert "clusterrole.rbac.authorization.k8s.io/lifeboat created" in applied.stdout
    role = served.kubectl("get", "clusterrole", "lifeboat", "-o", "yaml")
    stored = cyaml.safe_load(role.stdout)
    assert (
        stored["rules"]
        == next(
            d for d in cyaml.safe_load_all(RBAC.read_text()) if d and d["kind"] == "ClusterRole"
        )["rules"]
    )
    assert "lifeboat-state" in served.kubectl("get", "roles", "-n", "lifeboat").stdout


def test_an_rbac_object_with_an_unknown_field_is_refused(served: Served, tmp_path: Path) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "typo"},
        "rulez": [],
    }
    path = tmp_path / "typo.yaml"
    path.write_text(cyaml.safe_dump(role))
    refused = served.kubectl("apply", "-f", str(path), check=False)
    assert refused.returncode != 0
    assert 'unknown field "rulez"' in refused.stderr


def _converted(tmp_path: Path, cli: Callable[..., CliRun]) -> Path:
    settings = tmp_path / "settings.yaml"
    settings.write_text(ISSUE_SETTINGS)
    pools = tmp_path / "pools.yaml"
    run = cli(
        "convert", "--settings", settings, "--cluster-name", "prod-a", "--zone", "eu-west-1a",
        "--ami-alias", "al2023@v20241121", "--out", pools,
    )  # fmt: skip
    assert run.code == 0, run.err
    assert cyaml.safe_load(pools.read_text())["kind"] == "List"
    return pools


def test_kubectl_apply_of_converts_list_with_default_validation(
    served: Served, tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    pools = _converted(tmp_path, cli)
    dry = served.kubectl("apply", "--dry-run=server", "-f", str(pools))
    assert dry.stdout.splitlines() == [
        "nodepool.karpenter.sh/m5.8xlarge-min-300-max-2500 created (server dry run)",
        "ec2nodeclass.karpenter.k8s.aws/m5.8xlarge-min-300-max-2500 created (server dry run)",
    ]
    served.kubectl("apply", "-f", str(pools))
    assert served.kubectl("get", "nodepools", "-o", "name").stdout.strip() == (
        "nodepool.karpenter.sh/m5.8xlarge-min-300-max-2500"
    )


def test_a_list_item_with_an_unknown_field_is_still_refused(
    served: Served, tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    """The v2 document holds no models, so the check of a List's items is the server's."""
    pools = _converted(tmp_path, cli)
    document = cyaml.safe_load(pools.read_text())
    document["items"][1]["spec"]["bogusField"] = 1
    pools.write_text(cyaml.safe_dump(document))
    refused = served.kubectl("apply", "--dry-run=server", "-f", str(pools), check=False)
    assert refused.returncode != 0
    assert 'unknown field "spec.bogusField"' in refused.stderr


def test_a_configmap_list_item_with_an_unknown_field_is_refused(
    served: Served, tmp_path: Path
) -> None:
    """Regression (review): ConfigMap and ReplicationController had no schema in kubemu, so
    an unknown field passed even with the ``fieldValidation=Strict`` kubectl sends; a real
    server (and kubectl's own check of a List against the v2 models) refuses it."""
    item = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}, "bogus": 1}
    item["metadata"] = {"name": "typo", "namespace": "default"}
    listed = tmp_path / "list.yaml"
    listed.write_text(cyaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [item]}))
    refused = served.kubectl("apply", "-f", str(listed), check=False)
    assert refused.returncode != 0
    assert 'unknown field "bogus"' in refused.stderr
