"""kubemu.yamlfast reads YAML through rapidyaml only where that gives what PyYAML's safe loader
gives (YAML 1.1, as Kubernetes reads it): a differential test against PyYAML on every YAML
file of the repository, on kubectl's own output, on tricky scalars in every position a scalar
can take, and on generated documents. "None" (left to PyYAML) is always a right answer; a
different answer never is; and the files users feed replay must take the fast path."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kubemu import yamlfast, yamlload
from kubemu.clusterfile import load_cluster_file, read_documents
from tests.support import cyaml
from tests.support.properties import examples

ROOT = Path(__file__).resolve().parents[3]
# The repository's YAML as git tracks it: walking the tree would also walk .venv and the
# build's output (seconds at collection, in every test worker).
REPO_YAML = sorted(
    ROOT / name
    for name in subprocess.run(
        ["git", "ls-files", "*.yaml", "*.yml"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
)
# Cluster files and manifests, as users write or dump them: read by rapidyaml, not left over.
PLAIN_DATA = ["events/cluster.yaml", "deploy/rbac.yaml", "tests/fixtures/audit/clean.yaml"]


def _pyyaml(text: str) -> str:
    """PyYAML's reading, as repr (types and all: 8 is not 8.0 is not "8"), or its error."""
    try:
        return repr(list(yaml.load_all(text, Loader=yamlload.LOADER)))
    except yaml.YAMLError as error:
        return f"error: {type(error).__name__}"


def _assert_never_different(text: str) -> list[Any] | None:
    fast = yamlfast.plain_data_documents(text)
    if fast is not None:
        assert repr(fast) == _pyyaml(text), text
    return fast


def test_the_repository_has_yaml_files_to_compare() -> None:
    names = {str(path.relative_to(ROOT)) for path in REPO_YAML}
    assert set(PLAIN_DATA) <= names


@pytest.mark.parametrize("path", REPO_YAML, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_yaml_file_of_the_repository_reads_as_pyyaml_reads_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    fast = _assert_never_different(text)
    if str(path.relative_to(ROOT)) in PLAIN_DATA:
        assert fast is not None, "plain data must take the fast path"
    expected = _pyyaml(text)
    if not expected.startswith("error"):
        assert repr(yamlload.load_documents(text)) == expected


# Scalars where YAML 1.1 (PyYAML, Kubernetes) and YAML 1.2 (rapidyaml) may part ways, or
# where rapidyaml's JSON might not say what the YAML said.
TRICKY = [
    *["yes", "Yes", "YES", "no", "No", "NO", "on", "On", "off", "OFF", "y", "n", "Y", "N"],
    *["true", "True", "TRUE", "false", "False", "FALSE", "null", "Null", "NULL", "~", ""],
    *["0", "-0", "12", "-12", "+12", "010", "0755", "08", "0o17", "0x1F", "0b101", "1_000"],
    *["1.5", "-1.5", "1.10", "1.", ".5", "-.5", "1e3", "1E3", "1.5e3", "1.5e+3", "1e-3"],
    *["1:20", "1:20.5", "-1:20", ".inf", "-.Inf", "+.INF", ".nan", ".NaN", "inf", "nan"],
    *["NaN", "Infinity", "infinity", "-inf", "+inf", "-nan"],
    *["2026-12-01", "2026-12-01T14:00:00Z", "2026-12-01t14:00:00.5+01:00", "2026-1-1"],
    *["<<", "=", "-", "a b", "500m", "7220Mi", "10.0.0.1", "1.32.0", "v1.32", "0b7e-5d2f"],
    *["'yes'", '"010"', "'2026-12-01'", '"1e3"', "''", '""', "'it''s'", '"tab\\tq\\"x"'],
    *['"\\u00e9\\x41"', "'nan'", '"inf"', "!!str 12", "!!int '12'", "!!binary aGk=", "&a 12"],
    *["&", "& x", "*", "*.example.com", "Tom & Jerry", "@home", "`cmd`", "a@b", "#x", "%x"],
    *[":x", "::1", "?x", "-x", "x:", "0:", "a:b", "}", "]", ","],
]


def _placements(scalar: str) -> list[str]:
    return [
        f"k: {scalar}\n",
        f"- {scalar}\n- x\n",
        f"{scalar}: v\n",
        f"a: [{scalar}, x]\n",
        f"a: {{k: {scalar}, j: x}}\n",
        f"{{{scalar}: v}}\n",
        f"k: &anchor {scalar}\nj: *anchor\n",
        f"k:\n  - {scalar}  # a comment\n",
        f"k: words before {scalar}\n",
        f"k: {scalar}\n  continued\n",
        f"--- {scalar}\n...\n--- {scalar}\n",
        f"k: {scalar}\r\nj: x\r\n",
    ]


@pytest.mark.parametrize("scalar", TRICKY)
def test_a_tricky_scalar_anywhere_reads_as_pyyaml_reads_it(scalar: str) -> None:
    for text in _placements(scalar):
        _assert_never_different(text)


@pytest.mark.parametrize(
    "text",
    [
        "k: 12\nf: 1.5\nt: true\nn: null\ne:\ns: '010'\nq: \"yes\"\nl: [1, 'on']\n",
        "a: 1\na: 2\n",  # a duplicate key: the last wins, in both
        "\ufeffa: 1\n",  # a byte order mark
        "---\na: 1\n...\n---\nb: 2\n...\n",
        "---\n",
        "",
        "# only a comment\n",
        "k: |\n  literal\n   kept\n\nf: >-\n  folded\n  text\n",
        "k: 'multi\n\n  line'\nd: \"esc\\\n  aped\"\n",
        "creationTimestamp: '2026-11-20T08:00:00Z'\nmessage: kubelet has no disk pressure\n",
        # managedFields (kubectl get --show-managed-fields): braces in plain keys
        'fieldsV1:\n  f:status:\n    k:{"type":"Ready"}:\n      .: {}\n      f:message: {}\n',
    ],
)
def test_plain_data_takes_the_fast_path_and_reads_as_pyyaml_reads_it(text: str) -> None:
    fast = _assert_never_different(text)
    assert fast is not None


@pytest.mark.parametrize(
    "text",
    [
        "k: yes\n",
        "k: 010\n",
        "k: 2026-12-01\n",
        "k: 2026-12-01 14:00:00\n",
        "k: 1e3\n",
        "12: twelve\n",
        "k: !!str 12\n",
        "base: &b {k: 1}\nm:\n  <<: *b\n",
        "? complex\n: key\n",
        "k:\tv\n",
        "%YAML 1.1\n---\nk: v\n",
        "'nan': x\n",
        "a: &x 1\nb: &x 2\nc: *x\n",  # an anchor defined twice: PyYAML refuses it
        # Any alias (issue 23.5): rapidyaml's resolve() would expand an alias bomb before
        # anything could count it; PyYAML shares, and read_documents caps the expansion.
        "a: &x {k: [1, 2]}\nb: *x\n",
        # A block scalar ends the file with no line break: PyYAML keeps none, rapidyaml one.
        "a: |\n  y",
        "a: >\n  y",
        "- |\n  y",
        # An alias to an anchor of an earlier document: PyYAML refuses it (anchors are per
        # document), rapidyaml's resolve() spans the stream.
        "a: &x 1\n---\nb: *x\n",
        "a: &x {b: 1}\n---\nc: *x\n",
        # A simple key past 1024 characters: PyYAML's scanner refuses it.
        "x" * 1100 + ": 1\n",
        '"' + "x" * 1100 + '": 1\n',
        "a: 1\n" + "y" * 1100 + ": 2\n",
    ],
)
def test_what_rapidyaml_could_read_otherwise_is_left_to_pyyaml(text: str) -> None:
    assert yamlfast.plain_data_documents(text) is None
    try:
        loaded = repr(yamlload.load_documents(text))
    except yaml.YAMLError as error:
        loaded = f"error: {type(error).__name__}"
    assert loaded == _pyyaml(text)


@pytest.mark.parametrize(
    "text", ["a: 1\nb: [c\n", "a: b: c\n", "a: 1\n b: 2\n", "a: *nowhere\n", "[a, b]: c\n"]
)
def test_bad_yaml_is_left_to_pyyaml_and_rapidyaml_prints_nothing(
    text: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """PyYAML's error (with its line) is the one reported: rapidyaml's own message, written
    to the process's standard error before it raises, must not show."""
    assert yamlfast.plain_data_documents(text) is None
    with pytest.raises(yaml.YAMLError):
        yamlload.load_documents(text)
    assert capfd.readouterr().err == ""


KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="needs the stock kubectl")
def test_kubectl_output_takes_the_fast_path_and_reads_as_pyyaml_reads_it(
    tmp_path: Path,
) -> None:
    """go-yaml (what kubectl prints with) quotes every string YAML 1.1 would read otherwise,
    so a dump is plain data: what `kubectl create --dry-run=client -o yaml` prints, with the
    scalars above as ConfigMap values, must take the fast path and read the same. Except
    inf and nan spelled otherwise than YAML 1.1 does (``nan``, ``-inf``): strings to go-yaml
    and PyYAML, which leave them unquoted, and rewritten by rapidyaml, so left to PyYAML.
    And ``<<`` and ``=``, which go-yaml leaves unquoted and PyYAML refuses (YAML 1.1's merge
    and value keys), so left to PyYAML and its error."""
    naninf = {"inf", "nan", "NaN", "Infinity", "infinity", "-inf", "+inf", "-nan"}
    literals = [
        f"--from-literal=k{i}={value}"
        for i, value in enumerate(TRICKY)
        if value and value not in naninf | {"<<", "="}
    ]
    runs = [
        ["create", "configmap", "tricky", *literals, "--from-literal=ml=two\nlines"],
        ["create", "deployment", "web", "--image=nginx", "--replicas=3", "--port=8080"],
        ["create", "service", "clusterip", "web", "--tcp=80:8080"],
    ]
    documents = []
    for args in runs:
        done = subprocess.run(
            [str(KUBECTL), *args, "--dry-run=client", "-o", "yaml"],
            capture_output=True,
            text=True,
            timeout=30,
            env={"KUBECONFIG": str(tmp_path / "none"), "PATH": "/usr/bin:/bin"},
            check=True,
        )
        documents.append(done.stdout)
    text = "---\n".join(documents)
    fast = _assert_never_different(text)
    assert fast is not None and len(fast) == 3
    assert fast[0]["data"]["k0"] == "yes" and fast[0]["data"]["ml"] == "two\nlines"
    with_naninf = text.replace("  k0: ", "  nan: nan\n  k0: ")
    assert yamlfast.plain_data_documents(with_naninf) is None
    assert yamlload.load_documents(with_naninf)[0]["data"]["nan"] == "nan"


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.dates()
    | st.sampled_from(TRICKY)
)
_data = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=8) | st.integers() | st.sampled_from(TRICKY), inner)
    ),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    data=st.lists(_data, min_size=1, max_size=3),
    flow=st.sampled_from([None, True, False]),
    style=st.sampled_from([None, '"', "'"]),
    width=st.sampled_from([20, 80]),
)
def test_any_dumped_data_reads_as_pyyaml_reads_it(
    data: list[Any], flow: bool | None, style: str | None, width: int
) -> None:
    text = cyaml.safe_dump_all(
        data, default_flow_style=flow, default_style=style, width=width, allow_unicode=True
    )
    _assert_never_different(text)
    _assert_never_different(text.rstrip("\n"))  # a file without its final line break


@settings(max_examples=examples(300), deadline=None)
@given(
    words=st.lists(st.text(max_size=10) | st.sampled_from(TRICKY), min_size=1, max_size=6),
    shape=st.sampled_from(["k{i}: {w}", "- {w}", "{w}: {i}", "- [{w}, {i}]", "k{i}: [{w}]"]),
)
def test_any_hand_written_scalar_reads_as_pyyaml_reads_it(words: list[str], shape: str) -> None:
    """Unquoted, as a hand-written file has them: whatever PyYAML makes of them (or refuses),
    the fast path either agrees or leaves the file to it."""
    text = "\n".join(shape.format(i=i, w=w) for i, w in enumerate(words))
    _assert_never_different(text + "\n")
    _assert_never_different(text)  # a file without its final line break


NODE = """apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-0-1.ec2.internal
  creationTimestamp: {stamp}
  labels: {{karpenter.sh/registered: 'true'}}
"""


def test_cluster_files_rapidyaml_reads_need_no_conversion_and_the_others_get_it(
    tmp_path: Path,
) -> None:
    """What rapidyaml read holds JSON's types only (the replay skips converting it); a file
    left to PyYAML may hold a datetime, which still reaches the API as an RFC 3339 string."""
    quoted = NODE.format(stamp="'2026-11-20T08:00:00Z'")
    plain = NODE.format(stamp="2026-11-20T08:00:00Z")
    assert read_documents(quoted)[1] is False
    assert read_documents(plain)[1] is True
    for text in (quoted, plain):
        path = tmp_path / "cluster.yaml"
        path.write_text(text)
        (node,) = load_cluster_file(path)
        assert node["metadata"]["creationTimestamp"] == "2026-11-20T08:00:00Z"
        assert node["metadata"]["labels"] == {"karpenter.sh/registered": "true"}


@settings(max_examples=examples(300), deadline=None)
@given(
    lengths=st.lists(
        st.sampled_from([0, 1, 769, 770, 1024, 1025, 1026, 1536, 1537, 2049])
        | st.integers(0, 3000),
        min_size=1,
        max_size=6,
    ),
    final_break=st.booleans(),
)
def test_every_line_past_pyyamls_simple_key_limit_is_looked_at(
    lengths: list[int], final_break: bool
) -> None:
    """PyYAML's scanner refuses a simple key past 1024 characters (rapidyaml has no limit):
    the probe that finds long lines without splitting the file misses none."""
    text = "\n".join("x" * n for n in lengths) + ("\n" if final_break else "")
    expected = [line for line in text.split("\n") if len(line) > 1024]
    assert list(yamlfast._long_lines(text)) == expected
