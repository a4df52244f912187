#!/usr/bin/env python3
"""Write events/sqs/<name>.json: each events/<name>.json as the SQS batch a Lambda receives.

Deterministic (ids are derived from the event id, timestamps from the event time, the MD5 is
computed), so the SQS samples never drift from the EventBridge ones. Standard library only.

    python events/make_sqs_samples.py           # rewrite events/sqs/*.json
    python events/make_sqs_samples.py --check   # exit 1 if any is missing or out of date
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import sys
import uuid
from datetime import datetime
from pathlib import Path

EVENTS = Path(__file__).resolve().parent
QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:lifeboat-interruptions"
SENDER_ID = "AIDAIENQZJOLO23YVJ4VO"  # what SQS reports for messages EventBridge delivers
DELIVERY_DELAY_MS = 412  # event time -> SentTimestamp, a realistic EventBridge latency
NAMESPACE = uuid.UUID("6c1d0f4e-1b7a-4f0e-9b1e-6c6966656f61")


def sqs_batch(event: dict[str, object]) -> dict[str, object]:
    """``event`` as a one-record SQS batch, the way EventBridge delivers it to the queue."""
    body = json.dumps(event, separators=(",", ":"))
    event_id = str(event["id"])
    sent = datetime.fromisoformat(str(event["time"])).timestamp() * 1000 + DELIVERY_DELAY_MS
    digest = hashlib.sha256(event_id.encode()).digest()
    receipt = base64.b64encode(b"AQEB" + digest * 4).decode()
    return {
        "Records": [
            {
                "messageId": str(uuid.uuid5(NAMESPACE, event_id)),
                "receiptHandle": receipt,
                "body": body,
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": str(int(sent)),
                    "SenderId": SENDER_ID,
                    "ApproximateFirstReceiveTimestamp": str(int(sent) + 23),
                },
                "messageAttributes": {},
                "md5OfBody": hashlib.md5(body.encode()).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": QUEUE_ARN,
                "awsRegion": "us-east-1",
            }
        ]
    }


def render(event_file: Path) -> str:
    """The text of the SQS sample for ``event_file``."""
    event = json.loads(event_file.read_text(encoding="utf-8"))
    return json.dumps(sqs_batch(event), indent=2) + "\n"


def samples(events_dir: Path = EVENTS) -> dict[Path, str]:
    """Every SQS sample path and the text it should hold."""
    return {
        events_dir / "sqs" / path.name: render(path) for path in sorted(events_dir.glob("*.json"))
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report drift, write nothing")
    args = parser.parse_args(argv)
    stale = []
    for path, text in samples().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'out of date' if args.check else 'wrote'}: {path.relative_to(EVENTS.parent)}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
