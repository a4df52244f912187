"""The forms a cluster file takes on its way in and out (issue 36, item 3): rapidyaml's JSON
emitted into a buffer of the reader's own (``yamlfast._json_text``) gives what PyYAML reads,
also when the buffer first guessed is too small; the cluster files Lifeboat writes
(``dump_cluster_file``: ``--state-out``) hold no anchors or aliases, as ``kubectl get -o
yaml``'s do not, so reading one back needs no alias resolution; and a file with aliases
is still read, and an alias bomb still refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubemu import yamlfast
from kubemu.clusterfile import (
    UnsafeYaml,
    dump_cluster_file,
    load_cluster_file,
    read_documents,
)
from kubemu.yamlload import LOADER
from tests.support import cyaml


def _pyyaml(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=LOADER))


def test_json_larger_than_the_first_buffer_is_emitted_again_at_its_size() -> None:
    # 200 aliases of a 100-key mapping: the JSON is ~100 times the text, far past the
    # buffer of twice the text tried first.
    anchored = "".join(f"    k{i}: v{i}\n" for i in range(100))
    text = "base:\n  shared: &big\n" + anchored + "".join(f"a{i}: *big\n" for i in range(200))
    read = yamlfast.plain_data_documents(text)
    assert read is not None, "plain data with a bounded expansion takes the fast path"
    assert read == _pyyaml(text)
    assert len(read[0]) == 201


def test_a_file_of_comments_only_holds_no_documents() -> None:
    assert yamlfast.plain_data_documents("# nothing here\n") == []
    assert _pyyaml("# nothing here\n") == []


def _claims(shared: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "karpenter.sh/v1",
            "kind": "NodeClaim",
            "metadata": {"name": f"claim-{n}"},
            "spec": {"nodeClassRef": shared, "requirements": []},
        }
        for n in range(3)
    ]


def test_a_written_cluster_file_spells_shared_values_out_as_kubectl_does(
    tmp_path: Path,
) -> None:
    shared = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
    path = tmp_path / "state.yaml"
    dump_cluster_file(_claims(shared), path)
    text = path.read_text()
    assert "&" not in text and "*" not in text, text
    assert text.count("name: default") == 3
    loaded = load_cluster_file(path)
    assert [c["spec"]["nodeClassRef"] for c in loaded] == [shared] * 3
    # PyYAML's own dumper would have written an anchor and two aliases.
    assert "*id001" in cyaml.safe_dump({"items": _claims(shared)})


def test_a_written_cluster_file_takes_the_fast_path(tmp_path: Path) -> None:
    path = tmp_path / "state.yaml"
    dump_cluster_file(_claims({"name": "default"}), path)
    text = path.read_text()
    assert yamlfast.plain_data_documents(text) == _pyyaml(text)


def test_an_alias_bomb_is_still_refused() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
    )
    assert yamlfast.plain_data_documents(bomb) is None  # never handed to rapidyaml
    with pytest.raises(UnsafeYaml, match="excessive aliasing"):
        read_documents(bomb)
