"""``lifeboat serve``: a cluster file as a local Kubernetes API that kubectl can use.

Also what ``lifeboat replay --serve`` calls once the replay is done.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import urllib.request
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import yaml

from kubemu import Emulator
from lifeboat_local.common import EXIT_OK, UsageError, add_command, note, warn
from lifeboat_local.load_checks import hash_mismatches
from lifeboat_local.source import assumption_text, load_objects

# How long the server may take to answer its first request before serve gives up.
READY_SECONDS = 10.0
CONTEXT = "lifeboat-local"


EXAMPLES = """
    lifeboat serve --cluster events/cluster.yaml --kubeconfig-out /tmp/lifeboat.kubeconfig
    KUBECONFIG=/tmp/lifeboat.kubeconfig kubectl get nodes -o wide
    lifeboat replay events/spot-interruption.json --cluster events/cluster.yaml \\
        --serve --kubeconfig-out /tmp/lifeboat.kubeconfig
"""


def add_parser(commands: Any) -> None:
    parser = add_command(
        commands,
        "serve",
        summary="serve a cluster file as a local Kubernetes API (for kubectl) until interrupted",
        description="Load a cluster file into the local Kubernetes API emulator on 127.0.0.1, "
        "write a kubeconfig for it once it answers, print its address, and serve until "
        "SIGINT or SIGTERM (then exit 0). The stock kubectl works against it: discovery, "
        "tables, describe, cordon, taint, label, annotate, patch, apply, delete, drain, "
        "watch, auth can-i, server-side dry run.",
        examples=EXAMPLES,
    )
    parser.add_argument("--cluster", type=Path, required=True, metavar="CLUSTER.yaml")
    add_serve_flags(parser, serve_flag=False)
    parser.add_argument(
        "--port", type=int, default=0, metavar="N", help="port on 127.0.0.1 (default: any free)"
    )
    parser.add_argument(
        "--rbac",
        type=Path,
        metavar="RBAC.yaml",
        help="RBAC objects (e.g. deploy/rbac.yaml) enforced for impersonated requests "
        "(kubectl --as/--as-group); requests without impersonation are a cluster admin's",
    )


def add_serve_flags(parser: argparse.ArgumentParser, *, serve_flag: bool = True) -> None:
    """``--kubeconfig-out`` (and for replay, ``--serve``)."""
    if serve_flag:
        parser.add_argument(
            "--serve",
            action="store_true",
            help="afterwards, serve the replayed cluster for kubectl until interrupted",
        )
    parser.add_argument(
        "--kubeconfig-out",
        type=Path,
        metavar="PATH",
        required=not serve_flag,
        help="where to write the kubeconfig of the served cluster",
    )


def check_args(args: argparse.Namespace) -> None:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"serve: --port {args.port} is not a port number")


def run(args: argparse.Namespace) -> int:
    objects = load_objects(args.cluster)
    for warning in hash_mismatches(objects):
        warn(warning)
    rbac = _rbac_objects(args.rbac) if args.rbac else None
    try:
        emulator = Emulator(objects, port=args.port)
    except ValueError as error:
        raise UsageError(f"--cluster {args.cluster}: {error}") from None
    for assumption in emulator.trust_exported_pdb_status():
        note(assumption_text(assumption))
    if rbac is not None:
        emulator.load_rbac(rbac)
    try:
        emulator.start()
    except OSError as error:
        raise UsageError(f"serve: cannot listen on 127.0.0.1:{args.port}: {error}") from None
    try:
        return serve(emulator, args.kubeconfig_out, f"cluster file {args.cluster}")
    finally:
        emulator.stop()


def serve(emulator: Emulator, kubeconfig_out: Path, what: str, out: TextIO | None = None) -> int:
    """Writes the kubeconfig once the server answers, then serves until SIGINT or SIGTERM."""
    out = out or sys.stdout
    _wait_until_answering(emulator.url)
    try:
        write_kubeconfig(kubeconfig_out, emulator.url)
    except OSError as error:
        raise UsageError(f"--kubeconfig-out {kubeconfig_out}: {error.strerror or error}") from None
    out.write(
        f"serving {what} at {emulator.url}\n"
        f"kubeconfig: {kubeconfig_out} (e.g. KUBECONFIG={kubeconfig_out} kubectl get nodes)\n"
        "Ctrl-C to stop\n"
    )
    out.flush()
    stop = threading.Event()

    def interrupted(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, interrupted) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    out.write("stopped\n")
    return EXIT_OK


def write_kubeconfig(path: Path, server: str) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server}}],
        "users": [{"name": "admin", "user": {}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": "admin"}}],
        "current-context": CONTEXT,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))


def _wait_until_answering(url: str) -> None:
    deadline = threading.Event()
    for _ in range(int(READY_SECONDS / 0.05)):
        try:
            with urllib.request.urlopen(f"{url}/version", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            deadline.wait(0.05)
    raise UsageError(f"serve: the local API at {url} did not answer")


def _rbac_objects(path: Path) -> list[dict[str, Any]]:
    try:
        documents = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    except (OSError, yaml.YAMLError) as error:
        raise UsageError(f"--rbac {path}: {error}") from None
    kinds = {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
    found = [d for d in documents if d.get("kind") in kinds]
    if not found:
        raise UsageError(f"--rbac {path}: no ClusterRole, Role or binding in the file")
    return found
