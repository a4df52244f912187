"""Where the repository's samples and files are."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVENTS = ROOT / "events"
SQS_EVENTS = EVENTS / "sqs"
RAW_EVENTS = EVENTS / "raw"
# The sample cluster of ``make demo``: NodePools general and batch, one node group node.
SAMPLE_CLUSTER = EVENTS / "cluster.yaml"
TEMPLATE = ROOT / "template.yaml"
