"""Object names as the API server validates them (k8s.io/apimachinery/pkg/util/validation):
a Namespace's name is an RFC 1123 label (``IsDNS1123Label``, at most 63 characters), every
other kind the emulator serves an RFC 1123 subdomain (``IsDNS1123Subdomain``, at most 253:
``ValidateNodeName``, ``ValidatePodName``, ``NameIsDNSSubdomain`` for ConfigMaps and custom
resources). A name Kubernetes would reject never gets into the emulator, and so never into
what the tools print (a name carrying terminal escapes, for one)."""

from __future__ import annotations

import json
import re

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = rf"{_LABEL}(\.{_LABEL})*"
_LABEL_RE = re.compile(_LABEL)
_SUBDOMAIN_RE = re.compile(_SUBDOMAIN)

LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    f"regex used for validation is '{_LABEL}')"
)
SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    f"regex used for validation is '{_SUBDOMAIN}')"
)


def name_problem(kind: str, name: str) -> str | None:
    """The API server's complaint about ``metadata.name`` (None: a valid name), as it
    words it after ``metadata.name: ``."""
    if kind == "Namespace":
        limit, pattern, message = 63, _LABEL_RE, LABEL_MESSAGE
    else:
        limit, pattern, message = 253, _SUBDOMAIN_RE, SUBDOMAIN_MESSAGE
    if len(name) > limit:
        return f"Invalid value: {json.dumps(name)}: must be no more than {limit} characters"
    if not pattern.fullmatch(name):
        return f"Invalid value: {json.dumps(name)}: {message}"
    return None  # the name quoted only for a complaint: 25,000 json.dumps cost a cluster load
