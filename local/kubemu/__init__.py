"""A small, faithful Kubernetes API server emulator for tests, `lifeboat replay` and
`lifeboat serve`.

The unmodified official `kubernetes` client and the stock `kubectl` talk to it over real
HTTP/1.1 on 127.0.0.1. What it implements, and where it still differs from a real API
server, is listed in README.md beside this file.
"""

from .clusterfile import cluster_objects, dump_cluster_file, load_cluster_file
from .emulator import Emulator
from .errors import ApiError

__all__ = ["ApiError", "Emulator", "cluster_objects", "dump_cluster_file", "load_cluster_file"]
