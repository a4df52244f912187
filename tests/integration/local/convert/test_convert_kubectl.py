"""The stock kubectl accepts `lifeboat convert`'s output: `kubectl apply --dry-run=server`
against `lifeboat serve`, whose API server holds Karpenter's NodePool rules and
aws/karpenter-provider-aws's EC2NodeClass CRD (issue 28)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import CliRun
from tests.integration.kubemu.test_kubectl import KUBECTL, Served, cluster_objects, start
from tests.integration.local.convert.test_convert import ISSUE_SETTINGS
from tests.support import cyaml

pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

# The node group of issue 28's example, as test_convert reads it.
SETTINGS = ISSUE_SETTINGS


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(cyaml.safe_dump_all(cluster_objects()))
    server = start(tmp_path, "serve", "--cluster", str(cluster))
    yield server
    assert server.stop() == 0


def test_kubectl_apply_dry_run_server_accepts_converted_pools_and_classes(
    tmp_path: Path, cli: Callable[..., CliRun], served: Served
) -> None:
    settings = tmp_path / "settings.yaml"
    settings.write_text(SETTINGS)
    pools = tmp_path / "pools.yaml"
    run = cli(
        "convert", "--settings", settings, "--cluster-name", "prod-a", "--zone", "eu-west-1a",
        "--ami-alias", "al2023@v20241121",
        "--out", pools,
    )  # fmt: skip
    assert run.code == 0, run.err
    # Each object with kubectl's default validation (the server's, fieldValidation=Strict).
    documents = tmp_path / "documents.yaml"
    documents.write_text(cyaml.safe_dump_all(cyaml.safe_load(pools.read_text())["items"]))
    applied = served.kubectl("apply", "--dry-run=server", "-f", str(documents))
    assert applied.stdout.splitlines() == [
        "nodepool.karpenter.sh/m5.8xlarge-min-300-max-2500 created (server dry run)",
        "ec2nodeclass.karpenter.k8s.aws/m5.8xlarge-min-300-max-2500 created (server dry run)",
    ]
    # The List itself: kubectl validates a v1 List against OpenAPI v2 (its verifier answers
    # "unsupported" for List), which kubemu does not serve; --validate=ignore leaves the
    # checks to the server, whose CRD schema and CEL rules still apply (the output has no
    # unknown field: convert checked it with fieldValidation=Strict).
    listed_apply = served.kubectl(
        "apply", "--dry-run=server", "--validate=ignore", "-f", str(pools)
    )
    assert len(listed_apply.stdout.splitlines()) == 2
    # A dry run stores nothing.
    listed = served.kubectl("get", "ec2nodeclasses", "-o", "name")
    assert listed.stdout.strip() == ""


def test_kubectl_reports_the_crds_refusal_of_a_broken_node_class(
    tmp_path: Path, served: Served
) -> None:
    """The same server refuses what Karpenter's CRD refuses: a class with no role nor
    instance profile (spec CEL rule)."""
    broken = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "broken"},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod-a"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod-a"}}],
        },
    }
    path = tmp_path / "broken.yaml"
    path.write_text(cyaml.safe_dump(broken))
    refused = served.kubectl("apply", "--dry-run=server", "-f", str(path), check=False)
    assert refused.returncode != 0
    assert "must specify exactly one of ['role', 'instanceProfile']" in refused.stderr
