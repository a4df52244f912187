"""The CRDs kubemu validates against are aws/karpenter-provider-aws's files, unchanged.

Each file in ``local/kubemu/crds`` is two comment lines naming its source (repository, path,
commit) followed by the upstream file byte for byte: its git blob id (what ``git ls-tree``
prints for that path at that commit) is recorded below, so an edit by hand fails here. The
rules kubemu compiles are the rules these files hold, read from them and nothing else.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from kubemu import celrules, ec2nodeclass, karpenter
from kubemu.resources import NODECLAIMS, NODEPOOLS
from tests.support import cyaml

CRDS = Path(__file__).resolve().parents[3] / "local/kubemu/crds"
# On main after the v1.14.1 tag ("docs: update for patch release v1.14.1"); the tag's CRDs differ.
COMMIT = "1d927085dd81a9df9301e613f371dac5b4d16bfe"
# `git ls-tree <COMMIT> pkg/apis/crds/` in aws/karpenter-provider-aws.
UPSTREAM_BLOBS = {
    "karpenter.k8s.aws_ec2nodeclasses.yaml": "9fd4df3e1095589f6e0f5d7dcf91acf8808a2177",
    "karpenter.sh_nodeclaims.yaml": "5b70afa36d64b666710190cb93e01878398cbfcd",
    "karpenter.sh_nodepools.yaml": "8fa24a9217b5c36f72828afa6e740334cb197ff5",
}
_HEADER = re.compile(
    r"# From aws/karpenter-provider-aws \(Apache-2\.0\), pkg/apis/crds/(?P<name>\S+)\n"
    r"# at commit (?P<commit>[0-9a-f]{40}), unchanged: .*\n"
)


def _split(name: str) -> tuple[re.Match[str], bytes]:
    text = (CRDS / name).read_bytes()
    header = _HEADER.match(text.decode())
    assert header, f"{name}: no source header"
    return header, text[header.end() :]


def _blob_id(body: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()


@pytest.mark.parametrize("name", sorted(UPSTREAM_BLOBS))
def test_the_shipped_crd_is_the_upstream_file_byte_for_byte(name: str) -> None:
    header, body = _split(name)
    assert header["name"] == name
    assert header["commit"] == COMMIT
    assert _blob_id(body) == UPSTREAM_BLOBS[name]


def test_no_other_crd_is_shipped() -> None:
    assert sorted(p.name for p in CRDS.glob("*.yaml")) == sorted(UPSTREAM_BLOBS)


def _file_rules(name: str) -> list[str]:
    _, body = _split(name)
    crd = cyaml.safe_load(body)
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    found: list[str] = []

    def walk(node: dict[str, object]) -> None:
        for rule in node.get("x-kubernetes-validations") or []:  # type: ignore[attr-defined]
            found.append(rule["rule"])
        for child in (node.get("properties") or {}).values():  # type: ignore[attr-defined]
            walk(child)
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                walk(node[key])  # type: ignore[arg-type]

    walk(version["schema"]["openAPIV3Schema"])
    return found


def test_the_rules_kubemu_runs_are_the_files_rules() -> None:
    """Same texts, same count: no rule added, dropped or rewritten on the way to celpy."""
    running = {
        "karpenter.sh_nodeclaims.yaml": karpenter.rules(NODECLAIMS),
        "karpenter.sh_nodepools.yaml": karpenter.rules(NODEPOOLS),
        "karpenter.k8s.aws_ec2nodeclasses.yaml": ec2nodeclass.rules(),
    }
    for name, node in running.items():
        assert sorted(r.text for r in celrules.rules(node)) == sorted(_file_rules(name)), name
