"""What validating a write decided: shared by the built-in kinds' checks
(``kubemu.validation``) and Karpenter's (``kubemu.karpenter``), which validation calls."""

from __future__ import annotations

from dataclasses import dataclass, field

from .resources import Obj


@dataclass
class Verdict:
    """The object as it will be stored, and the warnings to send with the answer."""

    obj: Obj
    warnings: list[str] = field(default_factory=list)
