"""The stock kubectl against `lifeboat serve`, as an SRE would use it.

Each test starts `lifeboat serve` on a small cluster file (a subprocess, as a user runs it)
and drives the real kubectl binary at it. Where the emulator could still differ from a real
API server, the test says which behaviour it relies on.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import cyaml

ROOT = Path(__file__).resolve().parents[3]
KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl is not installed (CI has it: /usr/bin/kubectl)"
)
KUBECTL_TIMEOUT = 60
START_TIMEOUT = 30


def _node(name: str, ip: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"providerID": f"aws:///us-east-1a/i-{name}"},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "addresses": [{"type": "InternalIP", "address": ip}],
            "nodeInfo": {
                "kubeletVersion": "v1.31.2-eks-94953ac",
                "osImage": "Amazon Linux 2023",
                "kernelVersion": "6.1.115",
                "containerRuntimeVersion": "containerd://1.7.23",
            },
        },
    }


def _owned_pod(
    name: str, node: str, owner: dict[str, Any], labels: dict[str, str]
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": owner["metadata"]["namespace"],
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": owner["kind"],
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        # A short grace period: drained pods are Terminating for 1 s of the emulator's
        # clock, which runs at wall-clock speed under `lifeboat serve`.
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "app", "image": "nginx:1.27"}],
        },
        "status": {
            "phase": "Running",
            "podIP": "10.0.9.9",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _workload(kind: str, name: str, labels: dict[str, str], replicas: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}"},
        "spec": spec,
    }


def cluster_objects() -> list[dict[str, Any]]:
    """n1 runs two of the three replicas of `web` (PDB maxUnavailable 1: the ReplicaSet's
    scale of 3 needs 2 healthy, so neither may go); n2 runs one `api` pod (no PDB); both
    run a DaemonSet pod."""
    web = _workload("ReplicaSet", "web", {"app": "web"}, 3)
    api = _workload("ReplicaSet", "api", {"app": "api"}, 1)
    agent = _workload("DaemonSet", "agent", {"app": "agent"}, None)
    claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {
            "name": "general-abcde",
            "labels": {
                "karpenter.sh/nodepool": "general",
                "node.kubernetes.io/instance-type": "m5.large",
                "karpenter.sh/capacity-type": "spot",
                "topology.kubernetes.io/zone": "us-east-1a",
            },
        },
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "default",
            },
            "requirements": [
                {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}
            ],
        },
        "status": {
            "providerID": "aws:///us-east-1a/i-n1",
            "nodeName": "n1",
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}},
        _node("n1", "10.0.1.1"),
        _node("n2", "10.0.1.2"),
        claim,
        web,
        api,
        agent,
        _owned_pod("web-0", "n1", web, {"app": "web"}),
        _owned_pod("web-1", "n1", web, {"app": "web"}),
        _owned_pod("api-0", "n2", api, {"app": "api"}),
        _owned_pod("agent-n1", "n1", agent, {"app": "agent"}),
        _owned_pod("agent-n2", "n2", agent, {"app": "agent"}),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
        },
    ]


@dataclass
class Served:
    process: subprocess.Popen[str]
    kubeconfig: Path
    cache: Path

    def kubectl(
        self, *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        assert KUBECTL is not None
        command = [KUBECTL, f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.cache}", *args]
        result = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=KUBECTL_TIMEOUT,
            input=stdin,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)}: {result.returncode}\n{result.stdout}\n{result.stderr}"
            )
        return result

    def json(self, *args: str) -> Any:
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=START_TIMEOUT)


def start(tmp_path: Path, *args: str) -> Served:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "lifeboat_local.cli", *args, "--kubeconfig-out", str(kubeconfig)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    deadline = time.monotonic() + START_TIMEOUT
    while not kubeconfig.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            out, err = process.communicate(timeout=10)
            raise AssertionError(f"lifeboat did not start serving:\n{out}\n{err}")
        time.sleep(0.05)
    return Served(process, kubeconfig, tmp_path / "kube-cache")


def _serve(directory: Path) -> Iterator[Served]:
    cluster = directory / "cluster.yaml"
    cluster.write_text(cyaml.safe_dump_all(cluster_objects()))
    rbac = ROOT / "deploy" / "rbac.yaml"
    server = start(directory, "serve", "--cluster", str(cluster), "--rbac", str(rbac))
    yield server
    assert server.stop() == 0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """A server of this test's own: it may change the cluster."""
    yield from _serve(tmp_path)


@pytest.fixture(scope="module")
def reading(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the tests that only read (and refused writes): each starts no server
    of its own, and kubectl's discovery cache is filled once."""
    yield from _serve(tmp_path_factory.mktemp("reading"))


def _table(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


# --- discovery and reading ---------------------------------------------------------------


def test_discovery_lists_the_served_groups(reading: Served) -> None:
    resources = reading.kubectl("api-resources", "-o", "name").stdout.split()
    for name in (
        "nodes",
        "pods",
        "namespaces",
        "events",
        "poddisruptionbudgets.policy",
        "leases.coordination.k8s.io",
        "events.events.k8s.io",
        "daemonsets.apps",
        "replicasets.apps",
        "nodeclaims.karpenter.sh",
        "nodepools.karpenter.sh",
        "selfsubjectaccessreviews.authorization.k8s.io",
    ):
        assert name in resources
    assert "karpenter.sh/v1" in reading.kubectl("api-versions").stdout


def test_get_nodes_wide_prints_the_servers_columns(reading: Served) -> None:
    """printNode's columns, from the server's Table: STATUS, ROLES, INTERNAL-IP, ..."""
    rows = _table(reading.kubectl("get", "nodes", "-o", "wide").stdout)
    assert rows[0] == [
        "NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP",
        "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME",
    ]  # fmt: skip
    n1 = next(row for row in rows if row[0] == "n1")
    assert n1[1:3] == ["Ready", "<none>"]
    assert n1[4:7] == ["v1.31.2-eks-94953ac", "10.0.1.1", "<none>"]


def test_get_pods_pdbs_and_karpenter_columns(reading: Served) -> None:
    pods = _table(reading.kubectl("get", "pods", "-A", "-o", "wide").stdout)
    assert pods[0][:6] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    web_0 = next(row for row in pods if row[:2] == ["shop", "web-0"])
    # printPod: no containerStatuses in the file, so no container is counted ready.
    assert web_0[2:4] == ["0/1", "Running"]
    assert web_0[7] == "n1"  # -o wide: IP, NODE
    pdbs = _table(reading.kubectl("get", "pdb", "-n", "shop").stdout)
    assert pdbs[0] == [
        "NAME",
        "MIN",
        "AVAILABLE",
        "MAX",
        "UNAVAILABLE",
        "ALLOWED",
        "DISRUPTIONS",
        "AGE",
    ]
    assert pdbs[1][:4] == ["web", "N/A", "1", "0"]  # expected 3 (the scale), 2 healthy
    claims = _table(reading.kubectl("get", "nodeclaims", "-o", "wide").stdout)
    assert claims[0][:6] == ["NAME", "TYPE", "CAPACITY", "ZONE", "NODE", "READY"]
    assert claims[1][:6] == ["general-abcde", "m5.large", "spot", "us-east-1a", "n1", "True"]


def test_describe_node_shows_its_pods(reading: Served) -> None:
    text = reading.kubectl("describe", "node", "n1").stdout
    assert "Name:               n1" in text
    assert "web-0" in text
    assert "agent-n1" in text


# --- writing -----------------------------------------------------------------------------


def test_cordon_taint_label_annotate(served: Served) -> None:
    served.kubectl("cordon", "n2")
    served.kubectl("taint", "nodes", "n2", "example.com/maintenance=soon:NoSchedule")
    served.kubectl("label", "nodes", "n2", "team=platform")
    served.kubectl("annotate", "nodes", "n2", "example.com/owner=sre")
    node = served.json("get", "node", "n2")
    assert node["spec"]["unschedulable"] is True
    assert node["spec"]["taints"] == [
        {"key": "example.com/maintenance", "value": "soon", "effect": "NoSchedule"}
    ]
    assert node["metadata"]["labels"]["team"] == "platform"
    assert node["metadata"]["annotations"]["example.com/owner"] == "sre"
    status = _table(served.kubectl("get", "node", "n2").stdout)[1][1]
    assert status == "Ready,SchedulingDisabled"


def test_a_taint_with_an_unknown_effect_is_refused(served: Served) -> None:
    """validateNodeTaints: the effect must be NoSchedule, PreferNoSchedule or NoExecute."""
    result = served.kubectl(
        "patch", "node", "n2", "--type=merge", "-p",
        '{"spec":{"taints":[{"key":"a","effect":"NoSchedul"}]}}', check=False,
    )  # fmt: skip
    assert result.returncode != 0
    assert "spec.taints[0].effect" in result.stderr
    assert "Unsupported value" in result.stderr


def test_patch_merge_json_and_strategic(served: Served) -> None:
    served.kubectl("patch", "node", "n2", "--type=merge", "-p", '{"metadata":{"labels":{"a":"1"}}}')
    served.kubectl(
        "patch", "node", "n2", "--type=json",
        "-p", '[{"op":"add","path":"/metadata/labels/b","value":"2"}]',
    )  # fmt: skip
    served.kubectl(
        "patch", "pod", "web-0", "-n", "shop", "-p",
        '{"spec":{"containers":[{"name":"app","image":"nginx:1.28"}]}}',
    )  # fmt: skip
    labels = served.json("get", "node", "n2")["metadata"]["labels"]
    assert (labels["a"], labels["b"]) == ("1", "2")
    pod = served.json("get", "pod", "web-0", "-n", "shop")
    assert pod["spec"]["containers"][0]["image"] == "nginx:1.28"
    # A JSON patch `test` compares JSON values: 1 is not true.
    failed = served.kubectl(
        "patch", "node", "n2", "--type=json",
        "-p", '[{"op":"test","path":"/spec/unschedulable","value":1}]', check=False,
    )  # fmt: skip
    assert failed.returncode != 0


def test_apply_creates_then_updates_and_strict_validation_refuses_unknown_fields(
    served: Served, tmp_path: Path
) -> None:
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "debug", "namespace": "shop", "labels": {"app": "debug"}},
        "spec": {"containers": [{"name": "sh", "image": "busybox:1.37"}]},
    }
    path = tmp_path / "pod.yaml"
    path.write_text(cyaml.safe_dump(manifest))
    assert "pod/debug created" in served.kubectl("apply", "-f", str(path)).stdout
    manifest["metadata"]["labels"]["tier"] = "tools"
    path.write_text(cyaml.safe_dump(manifest))
    assert "pod/debug configured" in served.kubectl("apply", "-f", str(path)).stdout
    assert served.json("get", "pod", "debug", "-n", "shop")["metadata"]["labels"]["tier"] == "tools"
    manifest["spec"]["nodeNmae"] = "n1"
    path.write_text(cyaml.safe_dump(manifest))
    refused = served.kubectl("apply", "-f", str(path), check=False)
    assert refused.returncode != 0
    assert 'unknown field "spec.nodeNmae"' in refused.stderr


def test_creating_in_a_missing_namespace_is_not_found(served: Served, tmp_path: Path) -> None:
    """NamespaceLifecycle admission: 404 naming the namespace; once created, it works."""
    path = tmp_path / "pod.yaml"
    path.write_text(
        cyaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "namespace": "later"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            }
        )
    )
    refused = served.kubectl("create", "-f", str(path), check=False)
    assert refused.returncode != 0
    assert 'namespaces "later" not found' in refused.stderr
    served.kubectl("create", "namespace", "later")
    assert "pod/p created" in served.kubectl("create", "-f", str(path)).stdout


def test_a_nodeclaim_breaking_the_crd_is_refused(served: Served, tmp_path: Path) -> None:
    """NodeClaim CRD, spec.requirements CEL rule: an In requirement with minValues needs
    at least that many values (422 Invalid naming the field)."""
    claim = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": {"name": "bad"},
        "spec": {
            "nodeClassRef": {
                "group": "karpenter.k8s.aws",
                "kind": "EC2NodeClass",
                "name": "default",
            },
            "requirements": [
                {
                    "key": "node.kubernetes.io/instance-type",
                    "operator": "In",
                    "values": ["m5.large"],
                    "minValues": 2,
                }
            ],
        },
    }
    path = tmp_path / "claim.yaml"
    path.write_text(cyaml.safe_dump(claim))
    refused = served.kubectl("create", "-f", str(path), check=False)
    assert refused.returncode != 0
    assert 'NodeClaim "bad" is invalid: spec.requirements' in refused.stderr


def test_crd_cel_rules_answer_kubectl_as_the_api_server(served: Served, tmp_path: Path) -> None:
    """The CRDs' CEL rules, run by cel-python from the upstream files: the EC2NodeClass
    alias rule calling ``split`` refuses a Windows alias other than ``@latest``; the NodePool
    transition rule ``self.kind == oldSelf.kind`` lets a create through and refuses the
    patch that changes the kind."""
    node_class = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "win"},
        "spec": {
            "role": "KarpenterNodeRole-fleet",
            "amiSelectorTerms": [{"alias": "windows2022@v20250101"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "fleet"}}],
            "securityGroupSelectorTerms": [{"id": "sg-0123456789abcdef0"}],
        },
    }
    path = tmp_path / "class.yaml"
    path.write_text(cyaml.safe_dump(node_class))
    refused = served.kubectl("create", "-f", str(path), check=False)
    assert refused.returncode != 0
    assert (
        'spec.amiSelectorTerms[0].alias: Invalid value: "string": windows families may only'
        " specify version 'latest'"
    ) in refused.stderr
    ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    pool = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "cel"},
        "spec": {"template": {"spec": {"nodeClassRef": ref, "requirements": []}}},
    }
    path = tmp_path / "pool.yaml"
    path.write_text(cyaml.safe_dump(pool))
    assert "nodepool.karpenter.sh/cel created" in served.kubectl("create", "-f", str(path)).stdout
    change = '{"spec":{"template":{"spec":{"nodeClassRef":{"kind":"Other"}}}}}'
    refused = served.kubectl("patch", "nodepool", "cel", "--type=merge", "-p", change, check=False)
    assert refused.returncode != 0
    assert 'spec.template.spec.nodeClassRef: Invalid value: "object": nodeClassRef.kind is' in (
        refused.stderr
    )


def test_server_side_dry_run_changes_nothing(served: Served) -> None:
    served.kubectl("delete", "pod", "api-0", "-n", "shop", "--dry-run=server")
    served.kubectl("cordon", "n2", "--dry-run=server")
    served.kubectl("label", "node", "n2", "x=y", "--dry-run=server")
    node = served.json("get", "node", "n2")
    assert not node["spec"].get("unschedulable")
    assert "x" not in node["metadata"]["labels"]
    assert "deletionTimestamp" not in served.json("get", "pod", "api-0", "-n", "shop")["metadata"]


def test_delete_waits_for_the_grace_period(served: Served) -> None:
    """Graceful deletion: the pod is Terminating for its 1 s grace period, then gone;
    kubectl delete waits for it (a real kubelet confirms; the emulator's clock does), which
    kubectl's request log shows (no wall-clock bound)."""
    deleted = served.kubectl("delete", "pod", "api-0", "-n", "shop", "--timeout=20s", "-v=6")
    # kubectl's own request log (-v=6): after the DELETE the pod was still there
    # (Terminating), so kubectl watched it until the watch reported it deleted.
    requests = [
        line.split("] ", 1)[1] for line in deleted.stderr.splitlines() if "round_trippers" in line
    ]
    after = requests[[r.startswith("DELETE ") for r in requests].index(True) + 1 :]
    assert any(r.startswith("GET ") and "/pods/api-0 200 " in r for r in after)
    assert any("watch=true" in r and "metadata.name%3Dapi-0" in r for r in after)
    assert served.kubectl("get", "pod", "api-0", "-n", "shop", check=False).returncode != 0


# --- drain -------------------------------------------------------------------------------


def test_drain_is_refused_by_a_pdb_counting_the_replica_sets_scale(served: Served) -> None:
    """Disruption controller getExpectedPodCount: maxUnavailable 1 over a ReplicaSet of 3
    (2 pods exist) needs 2 healthy; evicting either pod is refused (429)."""
    result = served.kubectl("drain", "n1", "--ignore-daemonsets", "--timeout=3s", check=False)
    assert result.returncode != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget" in result.stderr
    pods = served.json("get", "pods", "-n", "shop")["items"]
    assert {p["metadata"]["name"] for p in pods} >= {"web-0", "web-1"}
    assert served.json("get", "node", "n1")["spec"]["unschedulable"] is True


def test_drain_ignoring_daemonsets_leaves_the_daemonset_pod(served: Served) -> None:
    result = served.kubectl("drain", "n2", "--ignore-daemonsets", "--timeout=30s")
    assert "node/n2 drained" in result.stdout
    assert "ignoring DaemonSet-managed Pods: shop/agent-n2" in result.stderr
    names = served.kubectl(
        "get", "pods", "-n", "shop", "--field-selector=spec.nodeName=n2", "-o", "name"
    ).stdout.split()
    assert names == ["pod/agent-n2"]


# --- watch, auth ---------------------------------------------------------------------------


def test_watch_streams_changes_as_table_rows(served: Served) -> None:
    """`get --watch`: a list, then a chunked watch from its resourceVersion; each event's
    object is a server-side Table row."""
    assert KUBECTL is not None
    watcher = subprocess.Popen(
        [KUBECTL, f"--kubeconfig={served.kubeconfig}", f"--cache-dir={served.cache}",
         "get", "nodes", "--watch", "--output-watch-events"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: queue.Queue[list[str]] = queue.Queue()

    def read() -> None:
        assert watcher.stdout is not None
        for line in watcher.stdout:
            lines.put(line.split())

    threading.Thread(target=read, daemon=True).start()
    seen: list[list[str]] = []
    try:
        deadline = time.monotonic() + 20
        while len(seen) < 3 and time.monotonic() < deadline:  # header and the two nodes
            seen.append(lines.get(timeout=20))
        served.kubectl("cordon", "n2")
        while time.monotonic() < deadline and not any(
            row[:2] == ["MODIFIED", "n2"] for row in seen
        ):
            seen.append(lines.get(timeout=20))
    finally:
        watcher.kill()
        watcher.communicate(timeout=10)
    assert seen[0][:3] == ["EVENT", "NAME", "STATUS"]
    assert ["ADDED", "n1", "Ready"] in [row[:3] for row in seen]
    assert ["MODIFIED", "n2", "Ready,SchedulingDisabled"] in [row[:3] for row in seen]


def test_auth_can_i_answers_from_rbac(reading: Served) -> None:
    """SelfSubjectAccessReview against deploy/rbac.yaml for the group it binds."""
    lifeboat = ["--as=lambda", "--as-group=lifeboat"]

    def can(*args: str) -> bool:
        return reading.kubectl("auth", "can-i", *args, check=False).stdout.strip() == "yes"

    assert can("create", "pods", "--subresource=eviction", "-n", "shop", *lifeboat)
    assert can("patch", "nodes", *lifeboat)
    assert not can("delete", "nodes", *lifeboat)
    assert can("update", "leases", "-n", "lifeboat", *lifeboat)
    assert not can("update", "leases", "-n", "default", *lifeboat)  # the Role is namespaced
    assert can("delete", "nodes")  # no impersonation: the kubeconfig's admin
    refused = reading.kubectl("delete", "node", "n2", *lifeboat, check=False)
    assert "forbidden" in refused.stderr


def test_sigint_stops_the_server_cleanly(tmp_path: Path) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(cyaml.safe_dump_all(cluster_objects()))
    server = start(tmp_path, "serve", "--cluster", str(cluster))
    server.process.send_signal(signal.SIGINT)
    assert server.process.wait(timeout=START_TIMEOUT) == 0
    out = server.process.stdout.read() if server.process.stdout else ""
    assert "serving cluster file" in out
    assert "http://127.0.0.1:" in out


def test_replay_serve_serves_the_replayed_cluster(tmp_path: Path) -> None:
    server = start(
        tmp_path,
        "replay",
        str(ROOT / "events" / "spot-interruption.json"),
        "--cluster",
        str(ROOT / "events" / "cluster.yaml"),
        "--at",
        "2026-12-01T14:05:00Z",
        "--serve",
    )
    try:
        claims = server.json("get", "nodeclaims")["items"]
        replacements = [
            c for c in claims if "lifeboat.dev/replaces" in (c["metadata"].get("labels") or {})
        ]
        assert replacements, "the replay's replacement NodeClaim is served"
        node = server.json("get", "node", "ip-10-0-1-11.ec2.internal")
        assert node["spec"]["unschedulable"] is True
    finally:
        assert server.stop() == 0


def test_kubectl_binary_is_the_one_ci_uses() -> None:
    assert KUBECTL is not None
    version = subprocess.run(
        [KUBECTL, "version", "--client", "-o", "json"],
        capture_output=True, text=True, timeout=KUBECTL_TIMEOUT, check=True,
        env={**os.environ},
    )  # fmt: skip
    assert json.loads(version.stdout)["clientVersion"]["major"] == "1"
