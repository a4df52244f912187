"""``python -m mutation [--target NAME ...] [--sample N] [--seed S] [--workdir DIR]``

For each target (a group of modules and the tests that cover them): copy the working tree
(tracked and untracked files, ignored ones left out) into ``DIR/tree``, initialise a
cosmic-ray session over the target's modules, optionally keep a random sample of ``N``
mutants (the rest are marked skipped, and the report says so), run each mutant against the
target's tests (``pytest -x``, the copy first on ``PYTHONPATH`` so the mutated file is the
one imported), and write ``DIR/report.json`` and ``DIR/report.md``: per target, mutants
run, killed (a failing test or a timeout), survived, and the kill rate; the survivors with
their diff, to be killed by a test or explained as equivalent.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

EQUIVALENT = "in an annotation: never evaluated"
ROOT = Path(__file__).resolve().parent.parent
LAYER = "layers/lifeboat/lifeboat"


@dataclass(frozen=True)
class Target:
    modules: tuple[str, ...]
    tests: tuple[str, ...]


TARGETS: dict[str, Target] = {
    "decide": Target(
        (f"{LAYER}/decide",),
        (
            "tests/unit/decide/test_decide.py",
            "tests/unit/decide/test_decide_wakeups.py",
            "tests/unit/decide/test_hand_over_decisions.py",
        ),
    ),
    "budgets": Target(
        (
            f"{LAYER}/karpenter/budgets.py",
            f"{LAYER}/karpenter/budget_windows.py",
            f"{LAYER}/karpenter/budget_spec.py",
        ),
        (
            "tests/unit/karpenter/test_budgets.py",
            "tests/unit/karpenter/test_karpenter_rules.py",
            "tests/integration/local/karpenter_sim/test_budget_scenarios.py",
        ),
    ),
    "cron": Target((f"{LAYER}/karpenter/cron.py",), ("tests/unit/karpenter/test_budgets.py",)),
    "act": Target(
        (
            f"{LAYER}/flow/act.py",
            f"{LAYER}/flow/act_node.py",
            f"{LAYER}/flow/act_replace.py",
            f"{LAYER}/flow/act_claim.py",
            f"{LAYER}/flow/act_drain.py",
        ),
        (
            "tests/integration/flow/test_taint_effect.py",
            "tests/integration/flow/test_drain_patience.py",
            "tests/integration/flow/test_act_answers.py",
            "tests/integration/flow/test_claim_namesake.py",
            "tests/integration/flow/test_one_replacement.py",
            "tests/integration/flow/test_lb_exclusion.py",
            "tests/integration/flow/test_end_to_end.py",
            "tests/integration/flow/test_lifecycle_completion.py",
            "tests/integration/flow/test_hand_over_when_ready.py",
            "tests/integration/aws/test_instance_status_vanish.py",
            "tests/integration/flow/test_never_strand.py",
        ),
    ),
    "node_patches": Target(
        (f"{LAYER}/marks/node_patches.py",),
        (
            "tests/unit/marks/test_taint_operations.py",
            "tests/unit/marks/test_lb_exclusion_patches.py",
            "tests/unit/marks/test_restore_operations.py",
            "tests/unit/marks/test_ec2_maintenance_label.py",
            "tests/integration/flow/test_taint_effect.py",
        ),
    ),
    "pool_lock": Target(
        (f"{LAYER}/kube/pool_lock.py",),
        (
            "tests/integration/flow/test_pool_lock_expiry.py",
            "tests/integration/flow/test_lease_namespace.py",
            "tests/integration/flow/test_budget_concurrency.py",
        ),
    ),
    "deadline": Target(
        (f"{LAYER}/model/deadline.py",),
        ("tests/unit/model/test_deadline.py", "tests/integration/flow/test_faults.py"),
    ),
    # Planned rotation: the pure plan, the rollback, the commands' wire format first (unit
    # tests, fast), then the looks and the runner through the emulator.
    "rotation": Target(
        (
            f"{LAYER}/rotation/plan.py",
            f"{LAYER}/rotation/rollback.py",
            f"{LAYER}/rotation/request.py",
            f"{LAYER}/rotation/messages.py",
            f"{LAYER}/rotation/model.py",
            f"{LAYER}/rotation/store.py",
            f"{LAYER}/rotation/observe.py",
            f"{LAYER}/rotation/look.py",
            f"{LAYER}/rotation/runner.py",
        ),
        (
            "tests/unit/rotation/test_rotation_plan.py",
            "tests/unit/rotation/test_rotation_request.py",
            "tests/unit/rotation/test_rotation_properties.py",
            "tests/unit/rotation/test_rotation_restore.py",
            "tests/integration/rotation/test_rotation_rollback_own.py",
            "tests/integration/rotation/test_rotation_waits.py",
            "tests/integration/rotation/test_rotation_stuck.py",
            "tests/integration/rotation/test_rotation_rollback.py",
            "tests/integration/rotation/test_rotation.py",
        ),
    ),
}


@dataclass
class Tally:
    target: str
    total: int = 0
    run: int = 0
    killed: int = 0
    survived: int = 0
    incompetent: int = 0
    # In annotations, never evaluated: not run, not counted in the rate.
    equivalent: int = 0
    survivors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rate(self) -> float | None:
        return self.killed / (self.killed + self.survived) if self.killed + self.survived else None


def copy_tree(destination: Path) -> None:
    """The working tree as git sees it (tracked and untracked, not ignored) into ``destination``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    if destination.exists():
        shutil.rmtree(destination)
    for raw in listed:
        if not raw:
            continue
        source = ROOT / os.fsdecode(raw)
        if not source.is_file():
            continue  # deleted in the tree, still in the index
        target = destination / os.fsdecode(raw)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def environment(tree: Path) -> dict[str, str]:
    """The copy ahead of the editable install on ``sys.path``: its modules are imported."""
    paths = [tree / "layers" / "lifeboat", tree / "local", tree]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in paths)
    return env


def test_command(target: Target) -> str:
    tests = " ".join(target.tests)
    return f"{sys.executable} -m pytest -x -q -p no:cacheprovider --timeout=120 {tests}"


def baseline(name: str, target: Target, tree: Path) -> None:
    """The target's tests must pass on the unmutated copy, or every mutant would look killed."""
    done = subprocess.run(
        test_command(target).split(), cwd=tree, env=environment(tree), capture_output=True
    )
    if done.returncode != 0:
        tail = done.stdout.decode(errors="replace")[-2000:]
        raise SystemExit(f"mutation: the tests of target {name!r} fail unmutated:\n{tail}")


def config_text(target: Target, timeout: float) -> str:
    command = test_command(target)
    modules = ", ".join(json.dumps(m) for m in target.modules)
    return (
        "[cosmic-ray]\n"
        f"module-path = [{modules}]\n"
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(command)}\n"
        "[cosmic-ray.distributor]\n"
        'name = "local"\n'
    )


def cosmic_ray(*args: str, tree: Path) -> None:
    executable = Path(sys.executable).parent / "cosmic-ray"
    subprocess.run([str(executable), *args], cwd=tree, env=environment(tree), check=True)


def annotation_spans(path: Path) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where ``path``'s annotations are. With ``from __future__ import annotations`` (every
    module here) they are never evaluated at run time: a mutant inside one is equivalent."""
    spans = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        elif isinstance(node, ast.arg | ast.AnnAssign):
            annotations.append(node.annotation)
        for a in annotations:
            if a is not None and a.end_lineno is not None and a.end_col_offset is not None:
                spans.append(((a.lineno, a.col_offset), (a.end_lineno, a.end_col_offset)))
    return spans


def skip_equivalent(session: Path, tree: Path) -> None:
    """Mark the mutants inside annotations skipped (see ``annotation_spans``)."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    spans: dict[str, list[tuple[tuple[int, int], tuple[int, int]]]] = {}
    equivalent = WorkResult(output=EQUIVALENT, worker_outcome=WorkerOutcome.SKIPPED)
    with use_db(str(session), WorkDB.Mode.open) as db:
        inside = []
        for item in db.pending_work_items:
            [mutation] = item.mutations
            module = str(mutation.module_path)
            if module not in spans:
                spans[module] = annotation_spans(tree / module)
            start = tuple(mutation.start_pos)
            if any(low <= start < high for low, high in spans[module]):
                inside.append(item.job_id)
        db.set_multiple_results(inside, equivalent)


def mutation_key(item: Any) -> tuple[str, tuple[int, int], str, int]:
    """What a work item changes, as a sort key that does not depend on its random job id."""
    [mutation] = item.mutations
    start = (int(mutation.start_pos[0]), int(mutation.start_pos[1]))
    return (str(mutation.module_path), start, mutation.operator_name, int(mutation.occurrence))


def sample(session: Path, keep: int, rng: random.Random) -> None:
    """Mark all but ``keep`` randomly chosen mutants skipped. The mutants are ordered by
    what they change (module, position, operator, occurrence), not by cosmic-ray's job ids,
    which are random: the same seed over the same code draws the same sample."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with use_db(str(session), WorkDB.Mode.open) as db:
        pending = [item.job_id for item in sorted(db.pending_work_items, key=mutation_key)]
        if len(pending) <= keep:
            return
        dropped = set(pending) - set(rng.sample(pending, keep))
        skipped = WorkResult(output="sampled out", worker_outcome=WorkerOutcome.SKIPPED)
        db.set_multiple_results(sorted(dropped), skipped)


def tally(name: str, session: Path) -> Tally:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    counts = Tally(name)
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            counts.total += 1
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                counts.equivalent += result.output == EQUIVALENT
                continue
            counts.run += 1
            if result.test_outcome == TestOutcome.INCOMPETENT:
                counts.incompetent += 1
            elif result.is_killed:
                counts.killed += 1
            else:
                counts.survived += 1
                [mutation] = item.mutations
                counts.survivors.append(
                    {
                        "module": str(mutation.module_path),
                        "line": mutation.start_pos[0],
                        "operator": mutation.operator_name,
                        "diff": result.diff,
                    }
                )
        counts.total += db.num_work_items - counts.total  # pending ones (an interrupted run)
    return counts


def markdown(tallies: list[Tally], sampled: int | None) -> str:
    lines = [
        "| target | mutants | in annotations | run | killed | survived | kill rate |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for t in tallies:
        rate = "-" if t.rate is None else f"{t.rate:.0%}"
        lines.append(
            f"| {t.target} | {t.total} | {t.equivalent} | {t.run} | {t.killed} | {t.survived}"
            f" | {rate} |"
        )
    if sampled:
        lines.append(f"\n(a random sample of at most {sampled} mutants per target was run)")
    for t in tallies:
        for s in t.survivors:
            lines += [f"\n{s['module']}:{s['line']} ({s['operator']})", "```diff", s["diff"], "```"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mutation", description=__doc__.split("\n")[0])
    parser.add_argument("--target", action="append", choices=sorted(TARGETS), default=None)
    parser.add_argument("--sample", type=int, default=None, help="mutants per target, at random")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant")
    parser.add_argument("--workdir", type=Path, default=ROOT / "mutation-results")
    args = parser.parse_args(argv)
    names = args.target or list(TARGETS)
    workdir: Path = args.workdir.resolve()
    tree = workdir / "tree"
    copy_tree(tree)
    rng = random.Random(args.seed)
    tallies = []
    for name in names:
        target = TARGETS[name]
        config = workdir / f"{name}.toml"
        session = workdir / f"{name}.sqlite"
        config.write_text(config_text(target, args.timeout), encoding="utf-8")
        session.unlink(missing_ok=True)
        baseline(name, target, tree)
        cosmic_ray("init", str(config), str(session), tree=tree)
        skip_equivalent(session, tree)
        if args.sample:
            sample(session, args.sample, rng)
        cosmic_ray("exec", str(config), str(session), tree=tree)
        tallies.append(tally(name, session))
        print(markdown(tallies[-1:], None).splitlines()[2], flush=True)
    report = {"sample": args.sample, "seed": args.seed, "targets": [asdict(t) for t in tallies]}
    (workdir / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    (workdir / "report.md").write_text(markdown(tallies, args.sample), encoding="utf-8")
    print(markdown(tallies, args.sample))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
