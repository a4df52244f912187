"""Label keys and values as the Kubernetes API server accepts them. Pure.

k8s.io/apimachinery ``pkg/api/validate/content``: ``IsLabelKey``, behind
``validation.IsQualifiedName``, and ``IsLabelValue``, behind ``IsValidLabelValue``:

* a key is ``[prefix/]name``; more than one ``/`` is refused;
* the name is 1-63 bytes of ``[A-Za-z0-9._-]``, starting and ending alphanumeric;
* the prefix is a lowercase RFC 1123 DNS subdomain of at most 253 bytes;
* a value is empty, or 1-63 bytes with the name's alphabet and ends.

Lengths are in bytes, as Go's ``len`` counts them. Used where Lifeboat reads labels from a
message (a rotation's node selector) and by ``lifeboat audit``.
"""

from __future__ import annotations

import re
from typing import Final

NAME_MAX: Final = 63
PREFIX_MAX: Final = 253
VALUE_MAX: Final = 63

_NAME: Final = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_VALUE: Final = re.compile(r"(?:(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_DNS_LABEL: Final = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN: Final = re.compile(rf"{_DNS_LABEL}(?:\.{_DNS_LABEL})*")

_NAME_RULE: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character"
)


def _bytes(text: str) -> int:
    return len(text.encode())


def dns_subdomain_problems(value: str) -> list[str]:
    """IsDNS1123Subdomain."""
    problems = []
    if _bytes(value) > PREFIX_MAX:
        problems.append(f"must be no more than {PREFIX_MAX} bytes")
    if not _DNS_SUBDOMAIN.fullmatch(value):
        problems.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character"
        )
    return problems


def label_key_problems(key: str) -> list[str]:
    """IsQualifiedName (IsLabelKey): why the API server would refuse ``key`` ([] if valid)."""
    parts = key.split("/")
    if len(parts) > 2:
        return [f"a valid label key {_NAME_RULE}, with an optional DNS subdomain prefix and '/'"]
    problems: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems += [f"prefix part {problem}" for problem in dns_subdomain_problems(prefix)]
    if not name:
        problems.append("name part must be non-empty")
    elif _bytes(name) > NAME_MAX:
        problems.append(f"name part must be no more than {NAME_MAX} bytes (has {_bytes(name)})")
    if not _NAME.fullmatch(name):
        problems.append(f"name part {_NAME_RULE}")
    return problems


def label_value_problems(value: str) -> list[str]:
    """IsValidLabelValue (IsLabelValue): why the API server would refuse ``value``."""
    problems = []
    if _bytes(value) > VALUE_MAX:
        problems.append(f"must be no more than {VALUE_MAX} bytes (has {_bytes(value)})")
    if not _VALUE.fullmatch(value):
        problems.append(
            f"a valid label must be an empty string or {_NAME_RULE.removeprefix('must ')}"
        )
    return problems
