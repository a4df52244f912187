"""PyYAML's safe loading and dumping through libyaml (``CSafeLoader``, ``CSafeDumper``: the
PyYAML wheels carry it), for the tests' own reading and writing of cluster files.

The tests read back every state file a command writes and write many cluster files: through
PyYAML's pure-Python scanner and emitter that was about a tenth of ``make test``'s CPU. The
C classes keep PyYAML's Python resolver and constructors, so a document means what
``yaml.safe_load`` makes of it; only the scanning and emitting are libyaml's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def safe_load(stream: str | bytes) -> Any:
    return yaml.load(stream, Loader=_LOADER)


def safe_load_all(stream: str | bytes) -> Iterator[Any]:
    return yaml.load_all(stream, Loader=_LOADER)


def safe_dump(data: Any, stream: Any = None, **options: Any) -> Any:
    return yaml.dump(data, stream, Dumper=_DUMPER, **options)


def safe_dump_all(documents: Any, stream: Any = None, **options: Any) -> Any:
    return yaml.dump_all(documents, stream, Dumper=_DUMPER, **options)
