"""`lifeboat convert --settings`: the file read through the cluster-file reader, bounded
(issue 33, item 5), and the settings keys as docs/migrating.md's table lists them: labels and
taints carried, unknown keys warned with the nearest name, the multi-AZ default stated
(issue 38, item 5)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from kubemu import Emulator
from lifeboat_local.convert.settings import KEYS
from tests.conftest import CliRun
from tests.integration.local.convert.test_convert import ISSUE_SETTINGS, apply_all, by_kind, write

ROOT = Path(__file__).resolve().parents[4]
PINNED = ("--ami-alias", "al2023@v20241121")
POOL = ("NodePool", "m5.8xlarge-min-300-max-2500")


def _run(tmp_path: Path, cli: Callable[..., CliRun], text: str, *extra: str) -> CliRun:
    return cli(
        "convert", "--settings", write(tmp_path, text), "--cluster-name", "prod-a",
        "--zone", "eu-west-1a", *PINNED, *extra,
    )  # fmt: skip


def test_fifty_thousand_deep_nesting_is_a_usage_error_not_a_recursion_error(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    deep = ISSUE_SETTINGS + "  extra: " + "[" * 50_000 + "]" * 50_000 + "\n"
    run = _run(tmp_path, cli, deep)
    assert run.code == 1, run.err
    assert "--settings" in run.err and "nesting depth" in run.err  # the YAML parser's bound
    assert "RecursionError" not in run.err and "Traceback" not in run.err
    # Deep enough to be no settings, not deep enough for the parser: convert's own bound.
    deeper = ISSUE_SETTINGS + "  extra: " + "[" * 200 + "]" * 200 + "\n"
    run = _run(tmp_path, cli, deeper)
    assert run.code == 1, run.err
    assert "nested more than 16 levels deep" in run.err


def test_a_node_count_past_int32_is_a_usage_error(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    """Not a cpu limit of 3.2e33: Auto Scaling's MaxSize is an int32."""
    huge = ISSUE_SETTINGS.replace("'2500'", "'" + "1" * 32 + "'")
    run = _run(tmp_path, cli, huge)
    assert run.code == 1, run.err
    assert "data.k8s_max_node_number" in run.err and "2,147,483,647" in run.err
    assert run.out == ""


def test_a_deep_instance_types_file_is_a_usage_error(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    types = write(tmp_path, "[" * 50_000 + "]" * 50_000, "types.json")
    run = _run(tmp_path, cli, ISSUE_SETTINGS, "--instance-types", str(types))
    assert run.code == 1
    assert "not the output of `aws ec2 describe-instance-types" in run.err
    assert "Traceback" not in run.err


def test_a_file_past_the_size_bound_is_a_usage_error(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    run = _run(tmp_path, cli, ISSUE_SETTINGS + "#" + "x" * (16 * 1024 * 1024) + "\n")
    assert run.code == 1
    assert "bytes: not settings" in run.err


def test_labels_and_taints_are_carried_into_the_pool(
    tmp_path: Path, cli: Callable[..., CliRun], emulator: Emulator
) -> None:
    """kubelet's --node-labels and --register-with-taints forms, as the docs' table says."""
    text = (
        ISSUE_SETTINGS
        + "  labels: 'team=shop, tier=web'\n"
        + "  taints: 'dedicated=shop:NoSchedule,spot:PreferNoSchedule'\n"
    )
    run = _run(tmp_path, cli, text)
    assert run.code == 0, run.err
    template = by_kind(run.out)[POOL]["spec"]["template"]
    assert template["metadata"] == {"labels": {"team": "shop", "tier": "web"}}
    assert template["spec"]["taints"] == [
        {"key": "dedicated", "effect": "NoSchedule", "value": "shop"},
        {"key": "spot", "effect": "PreferNoSchedule"},
    ]
    apply_all(emulator, run.out)


def test_an_unknown_key_is_warned_with_the_nearest_name_and_exits_3_with_strict(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    text = ISSUE_SETTINGS + "  k8s_max_node_numbr: '10'\n  lables: 'team=shop'\n"
    run = _run(tmp_path, cli, text)
    assert run.code == 0, run.err
    assert "warning:" in run.err
    assert "'k8s_max_node_numbr' (did you mean 'k8s_max_node_number'?)" in run.err
    assert "'lables' (did you mean 'labels'?)" in run.err
    strict = _run(tmp_path, cli, text, "--strict")
    assert strict.code == 3  # the exit-status table's "findings": with --strict, any warning
    assert "did you mean 'labels'?" in strict.err
    assert POOL in by_kind(strict.out)  # the work is still done, as with every --strict


def test_a_group_without_the_multi_az_key_is_said_to_be_single_zone_by_default(
    tmp_path: Path, cli: Callable[..., CliRun]
) -> None:
    text = ISSUE_SETTINGS.replace("  multi_az_provisioned_workers: 'false'\n", "")
    run = cli("convert", "--settings", write(tmp_path, text), *PINNED)
    assert run.code == 2
    assert "multi_az_provisioned_workers is absent (default 'false')" in run.err


def test_the_docs_table_lists_every_settings_key() -> None:
    """docs/migrating.md's "Settings keys" table: one row per key convert reads."""
    text = (ROOT / "docs" / "migrating.md").read_text()
    section = text.split("### Settings keys", 1)[1].split("\n#", 1)[0]
    rows = set(re.findall(r"^\| `([a-z0-9_]+)` \|", section, re.MULTILINE))
    assert rows == set(KEYS)
