"""Lifeboat's exceptions: one base, and a kind for each way a message can fail.

Every exception class Lifeboat defines derives from :class:`LifeboatError` through one of
these kinds (``tests/unit/test_errors.py`` holds every module to it), and keeps the built-in
base it had (``ValueError``, ``RuntimeError``, ``LookupError``), so ``except ValueError``
written before the hierarchy still catches what it caught. Imports nothing of Lifeboat's:
any module may import it.

- :class:`InvalidInput`: what Lifeboat was given is wrong (a message, a setting, a budget, a
  cron schedule, a rotation command); the error names the field. Never retried as is.
- :class:`RetryLater`: nothing is wrong, but not now (a busy lease, an instance EC2 does not
  know yet, a delivery being handled elsewhere); the message goes back to the queue.
- :class:`ClusterError`: the Kubernetes API, or the way to it, said no.
- :class:`BrokenInvariant`: a bug. Raised where the code relies on something its callers
  guarantee, instead of an ``assert`` (which ``python -O`` strips).
"""

from __future__ import annotations


class LifeboatError(Exception):
    """The base of every exception Lifeboat raises on purpose."""


class InvalidInput(LifeboatError, ValueError):
    """Input Lifeboat cannot use; the message says which field and why."""


class RetryLater(LifeboatError, RuntimeError):
    """Not now: the message is retried (and dead-lettered if it never succeeds)."""


class ClusterError(LifeboatError):
    """The Kubernetes API (or the authentication in front of it) refused or failed."""


class Gone(LifeboatError, LookupError):
    """What was looked for no longer exists."""


class BrokenInvariant(LifeboatError, RuntimeError):
    """Something the code relies on did not hold: a bug, reported instead of asserted."""
