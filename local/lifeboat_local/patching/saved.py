"""``lifeboat patching --from DIR``: AWS's answers saved as files, instead of asking AWS.

DIR holds JSON files as the AWS CLI prints them (any names; each file is recognised by what
it holds):

- ``aws ec2 describe-instances --instance-ids ...``: ``{"Reservations": [...]}``;
- ``aws ssm get-parameters --names ...`` or ``aws ssm get-parameters-by-path --path
  /aws/service/eks/optimized-ami/1.31 --recursive``: ``{"Parameters": [...]}``;
- ``aws ec2 describe-images --image-ids ...``: ``{"Images": [...]}``.

The answers are read through the same accessors as the live ones (``PatchingAws``), so a
verdict from saved answers is the verdict AWS's answers give. What a file cannot be (not
JSON, none of the three) is a usage error naming it; an answer kind DIR lacks is said on
stderr (its nodes are judged "unknown", as when AWS knows nothing of them).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from lifeboat_local.common import UsageError, note, read_text

# Top-level key -> the AWS call whose answer holds it, and how to save one.
KINDS = {
    "Reservations": ("ec2:DescribeInstances", "aws ec2 describe-instances --instance-ids ..."),
    "Parameters": ("ssm:GetParameters", "aws ssm get-parameters --names ..."),
    "Images": ("ec2:DescribeImages", "aws ec2 describe-images --image-ids ..."),
}
MAX_FILE_BYTES = 64 * 1024 * 1024


class SavedAws:
    """The three answers patching needs, from the files of ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.items: dict[str, list[Any]] = {key: [] for key in KINDS}
        where = f"--from {folder}"
        if not folder.is_dir():
            raise UsageError(f"{where}: {'not a folder' if folder.exists() else 'no such folder'}")
        files = sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.is_file())
        if not files:
            raise UsageError(f"{where}: no .json file (save AWS's answers there, see the docs)")
        for path in files:
            self._read(path)
        for key, (call, command) in KINDS.items():
            if not self.items[key]:
                note(f"{where}: no {call} answer among the files (save one with `{command}`)")

    def _read(self, path: Path) -> None:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise UsageError(f"--from {path}: larger than {MAX_FILE_BYTES // 2**20} MiB")
        try:
            document = json.loads(read_text(path, f"--from {path}"))
        except (ValueError, RecursionError) as error:
            raise UsageError(f"--from {path}: not JSON ({error})") from None
        found = [k for k in KINDS if isinstance(document, dict) and k in document]
        if not found:
            expected = ", ".join(f"{k} ({call})" for k, (call, _) in KINDS.items())
            raise UsageError(f"--from {path}: holds none of {expected}")
        for key in found:
            value = document[key]
            if not isinstance(value, list):
                raise UsageError(f"--from {path}: {key} is not a list")
            self.items[key] += value

    def instance_images(self, instance_ids: list[str]) -> dict[str, str]:
        wanted = set(instance_ids)
        found: dict[str, str] = {}
        for reservation in _dicts(self.items["Reservations"]):
            for instance in _dicts(reservation.get("Instances")):
                if instance.get("InstanceId") in wanted and instance.get("ImageId"):
                    found[str(instance["InstanceId"])] = str(instance["ImageId"])
        return found

    def parameters(self, names: list[str]) -> dict[str, str]:
        wanted = set(names)
        return {
            str(p["Name"]): str(p["Value"])
            for p in _dicts(self.items["Parameters"])
            if p.get("Name") in wanted and p.get("Value")
        }

    def creation_dates(self, image_ids: list[str]) -> dict[str, datetime]:
        wanted = set(image_ids)
        found: dict[str, datetime] = {}
        for image in _dicts(self.items["Images"]):
            if image.get("ImageId") in wanted and image.get("CreationDate"):
                text = str(image["CreationDate"]).replace("Z", "+00:00")
                try:
                    moment = datetime.fromisoformat(text)
                except ValueError:
                    raise UsageError(
                        f"--from: image {image['ImageId']}: CreationDate {text!r} is no "
                        "ISO 8601 instant"
                    ) from None
                # AWS writes UTC ("...Z"); a hand-made file without a zone is taken as UTC.
                found[str(image["ImageId"])] = (
                    moment if moment.tzinfo else moment.replace(tzinfo=UTC)
                )
        return found


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
