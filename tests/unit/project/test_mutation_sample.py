"""``make mutants`` draws the same sample for the same seed over the same code: mutants are
ordered by what they change, not by cosmic-ray's job ids, which are random uuids."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db
from cosmic_ray.work_item import MutationSpec, WorkItem

from mutation.__main__ import sample

MUTATIONS = [
    (module, (line, 4), operator, occurrence)
    for module in ("lifeboat/flow/act.py", "lifeboat/cron.py")
    for line in range(1, 26)
    for operator, occurrence in (("core/NumberReplacer", 0), ("core/AddNot", 1))
]


def session(path: Path) -> Path:
    """A cosmic-ray session holding MUTATIONS under fresh random job ids, in random order."""
    specs = list(MUTATIONS)
    random.shuffle(specs)
    with use_db(str(path), WorkDB.Mode.create) as db:
        for module, start, operator, occurrence in specs:
            spec = MutationSpec(module, operator, occurrence, start, (start[0], start[1] + 1))
            db.add_work_item(WorkItem(mutations=(spec,), job_id=uuid.uuid4().hex))
    return path


def kept(path: Path) -> set[tuple[str, int, str]]:
    with use_db(str(path), WorkDB.Mode.open) as db:
        return {
            (str(m.module_path), m.start_pos[0], m.operator_name)
            for item in db.pending_work_items
            for m in item.mutations
        }


def test_the_same_seed_keeps_the_same_mutants_whatever_their_job_ids(tmp_path: Path) -> None:
    first, second = session(tmp_path / "a.sqlite"), session(tmp_path / "b.sqlite")
    sample(first, 20, random.Random(27))
    sample(second, 20, random.Random(27))
    assert len(kept(first)) == 20
    assert kept(first) == kept(second)


def test_another_seed_keeps_other_mutants(tmp_path: Path) -> None:
    first, second = session(tmp_path / "a.sqlite"), session(tmp_path / "b.sqlite")
    sample(first, 20, random.Random(27))
    sample(second, 20, random.Random(28))
    assert kept(first) != kept(second)
