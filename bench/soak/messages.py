"""What the soak sends: fresh events built from the samples in ``events/`` about the soak
cluster's instances, malformed and foreign ones among them, duplicates, and pairs of
different notices for one instance."""

from __future__ import annotations

import copy
import json
import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

from bench.cluster import REGION
from bench.events import ACCOUNT
from lifeboat.model.report import Report

from .config import START, SoakConfig
from .world import World

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"

# Different notices about one instance, as AWS does send them: a Spot warning and the
# state change that follows, a capacity reservation's and the Spot market's, a rebalance
# recommendation and the interruption it foretold, a rebalance and a retirement.
PAIRS = (
    ("spot-interruption", "state-change"),
    ("spot-interruption", "capacity-reservation-interruption"),
    ("spot-interruption", "rebalance-recommendation"),
    ("rebalance-recommendation", "scheduled-change"),
)


@dataclass
class Sent:
    """One SQS message as sent, and what became of it."""

    message_id: str
    body: str
    label: str  # what the generator meant it to be (kind / malformed / foreign / ...)
    event_id: str | None
    instances: tuple[str, ...] = ()
    duplicate_of: str | None = None
    wakeup: bool = False
    # The other message of a pair of different notices for the same instance.
    paired_with: str | None = None
    receive_count: int = 0
    visible_at: float = 0.0
    reports: list[Report] | None = None
    dead_lettered: bool = False
    errors: list[str] = field(default_factory=list)

    def copy(self, message_id: str) -> Sent:
        """The same body sent again, as a message of its own."""
        return Sent(
            message_id,
            self.body,
            self.label,
            self.event_id,
            self.instances,
            duplicate_of=self.message_id,
            wakeup=self.wakeup,
        )


def _sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EVENTS_DIR / f"{name}.json").read_text("utf-8"))
    return loaded


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class EventFactory:
    """Fresh events built from the samples, about the soak cluster's instances."""

    KINDS = (
        ("spot-interruption", 22),
        ("rebalance-recommendation", 16),
        ("scheduled-change", 11),
        ("state-change", 12),
        ("asg-termination", 10),
        ("capacity-reservation-interruption", 8),
        ("unsupported", 3),
        ("malformed", 5),
        ("foreign", 3),
        ("poison", 1),
    )

    def __init__(self, rng: random.Random, world: World) -> None:
        self.rng = rng
        self.machines = [m for m in world.machines if m.instance_id not in world.poison]
        self.poison = [m for m in world.machines if m.instance_id in world.poison]
        self.others = list(world.others)
        # Pairs go to Karpenter nodes no other event names first, so both notices of a
        # pair meet a node nothing has acted on yet: where a second replacement can happen.
        fresh = [m for m in self.machines if m.nodeclaim]
        rng.shuffle(fresh)
        self.fresh = fresh[: len(fresh) // 2]
        reserved = {m.instance_id for m in self.fresh}
        self.machines = [m for m in self.machines if m.instance_id not in reserved]
        self.samples = {name: _sample(name) for name, _ in self.KINDS[:6]}
        self.hook = _sample("raw/asg-lifecycle-hook")
        self.test_notification = _sample("raw/asg-test-notification")

    def message_id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _time(self) -> datetime:
        return START - timedelta(seconds=self.rng.uniform(0, 90))

    def _instance(self) -> str:
        roll = self.rng.random()
        if roll < 0.04:  # unknown to EC2 (terminated long ago, another account's)
            return f"i-{self.rng.getrandbits(68):017x}"
        if roll < 0.07:
            return self.rng.choice(self.others)
        return self.rng.choice(self.machines).instance_id

    def _eventbridge(self, name: str, instance: str | None = None) -> tuple[dict[str, Any], str]:
        event = copy.deepcopy(self.samples[name])
        event["id"] = self.message_id()
        event["time"] = _stamp(self._time())
        instance = instance or self._instance()
        if "instance-id" in event["detail"]:
            event["detail"]["instance-id"] = instance
        event["resources"] = [f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{instance}"]
        return event, instance

    def make(self) -> Sent:
        label = self.rng.choices([k for k, _ in self.KINDS], [w for _, w in self.KINDS])[0]
        made: Sent = getattr(self, "_" + label.replace("-", "_"))()
        return made

    def pair(self) -> tuple[Sent, Sent]:
        """Two different notices for one fresh Karpenter instance (another if none is left)."""
        machine = self.fresh.pop() if self.fresh else self.rng.choice(self.machines)
        first, second = self.rng.choice(PAIRS)
        one = getattr(self, "_" + first.replace("-", "_"))(machine.instance_id)
        two = getattr(self, "_" + second.replace("-", "_"))(machine.instance_id)
        one.paired_with, two.paired_with = two.message_id, one.message_id
        return one, two

    def poison_message(self, instance: str) -> Sent:
        """A Spot warning for a node whose every GET fails: it must reach the DLQ."""
        return self._poison(instance)

    def _sent(self, body: Any, label: str, event_id: str | None, instances: Sequence[str]) -> Sent:
        text = body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))
        return Sent(self.message_id(), text, label, event_id, tuple(instances))

    def _spot_interruption(self, instance: str | None = None) -> Sent:
        event, instance = self._eventbridge("spot-interruption", instance)
        event["detail"]["instance-action"] = self.rng.choice(
            ["terminate", "terminate", "stop", "hibernate"]
        )
        return self._sent(event, "spot-interruption", event["id"], [instance])

    def _poison(self, instance: str | None = None) -> Sent:
        if not self.poison:
            return self._spot_interruption()
        instance = instance or self.rng.choice(self.poison).instance_id
        event, instance = self._eventbridge("spot-interruption", instance)
        return self._sent(event, "poison", event["id"], [instance])

    def _rebalance_recommendation(self, instance: str | None = None) -> Sent:
        event, instance = self._eventbridge("rebalance-recommendation", instance)
        return self._sent(event, "rebalance-recommendation", event["id"], [instance])

    def _capacity_reservation_interruption(self, instance: str | None = None) -> Sent:
        event, instance = self._eventbridge("capacity-reservation-interruption", instance)
        event["detail"]["instance-termination-time"] = _stamp(START + timedelta(minutes=2))
        return self._sent(event, "capacity-reservation-interruption", event["id"], [instance])

    def _state_change(self, instance: str | None = None) -> Sent:
        event, instance = self._eventbridge("state-change", instance)
        states = ["stopping", "stopped", "shutting-down", "terminated", "running", "pending"]
        # In a pair the instance is going away: the state change is an actionable one.
        event["detail"]["state"] = self.rng.choice(states[:4] if instance else states)
        return self._sent(event, "state-change", event["id"], [instance])

    def _scheduled_change(self, instance: str | None = None) -> Sent:
        event, _ = self._eventbridge("scheduled-change")
        if instance is not None:
            instances = [instance]
        else:
            instances = sorted({self._instance() for _ in range(self.rng.randint(1, 3))})
        start = START + self.rng.choice(
            [timedelta(minutes=20), timedelta(hours=3), timedelta(days=2)]
        )
        stamp = format_datetime(start, usegmt=True)
        detail = event["detail"]
        detail["startTime"] = detail["endTime"] = stamp
        detail["affectedEntities"] = [
            {"entityValue": i, "lastUpdatedTime": stamp, "status": "IMPAIRED"} for i in instances
        ]
        event["resources"] = instances
        return self._sent(event, "scheduled-change", event["id"], instances)

    def _asg_termination(self) -> Sent:
        instance = self._instance()
        form = self.rng.random()
        token = self.message_id()
        if form < 0.5:
            event, _ = self._eventbridge("asg-termination", instance)
            event["detail"]["EC2InstanceId"] = instance
            event["detail"]["LifecycleActionToken"] = token
            return self._sent(event, "asg-termination", event["id"], [instance])
        if form < 0.9:
            hook = copy.deepcopy(self.hook)
            hook.update(
                EC2InstanceId=instance,
                LifecycleActionToken=token,
                RequestId=self.message_id(),
                Time=self._time().strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            )
            body: dict[str, Any] = hook
            if form >= 0.75:  # through SNS
                body = {
                    "Type": "Notification",
                    "MessageId": self.message_id(),
                    "TopicArn": f"arn:aws:sns:{REGION}:{ACCOUNT}:lifeboat-asg",
                    "Message": json.dumps(hook),
                    "Timestamp": hook["Time"],
                }
            return self._sent(body, "asg-termination", None, [instance])
        note = copy.deepcopy(self.test_notification)
        note["RequestId"] = self.message_id()
        return self._sent(note, "asg-test-notification", None, [])

    def _unsupported(self) -> Sent:
        event, _ = self._eventbridge("spot-interruption")
        event["detail-type"] = "EC2 Fleet Instance Change"
        return self._sent(event, "unsupported", event["id"], [])

    def _foreign(self) -> Sent:
        event, instance = self._eventbridge("spot-interruption")
        if self.rng.random() < 0.5:
            event["account"] = "210987654321"
        else:
            event["region"] = "eu-west-1"
        return self._sent(event, "foreign", event["id"], [instance])

    def _malformed(self) -> Sent:
        event, _ = self._eventbridge("spot-interruption")
        roll = self.rng.randrange(5)
        if roll == 0:
            return self._sent(json.dumps(event)[:57], "malformed", None, [])
        if roll == 1:
            del event["detail"]["instance-id"]
        elif roll == 2:
            event["time"] = "yesterday"
        elif roll == 3:
            return self._sent(
                {"Type": "Notification", "MessageId": self.message_id(), "Message": "{not json"},
                "malformed",
                None,
                [],
            )
        else:
            event["detail"]["instance-id"] = "not-an-instance"
        return self._sent(event, "malformed", event["id"], [])


def generate(config: SoakConfig, rng: random.Random, factory: EventFactory) -> list[Sent]:
    """``config.events`` messages in the order they are queued.

    Every poison node is named by at least one of them; ``pair_rate`` of them come as pairs
    of different notices for one instance (most side by side, so mostly in one batch; one
    in three with its second a few batches later), and ``duplicate_rate`` are re-sent (new
    message id, same body): half right behind the original (mostly the same batch), half
    later."""
    messages: list[Sent] = []
    apart: list[Sent] = []
    pairs = round(config.events * config.pair_rate / 2)
    slots = config.events - pairs  # a pair's slot sends two messages
    special = rng.sample(range(slots), min(slots, pairs + len(factory.poison)))
    pair_slots = set(special[:pairs])
    poison_slots = dict(zip(special[pairs:], factory.poison, strict=False))
    for slot in range(slots):
        if slot in pair_slots:
            one, two = factory.pair()
            messages.append(one)
            if rng.random() < 1 / 3:
                apart.append(two)
            else:
                messages.append(two)
            continue
        if slot in poison_slots:
            messages.append(factory.poison_message(poison_slots[slot].instance_id))
            continue
        messages.append(factory.make())
    for second in apart:
        first = next(i for i, m in enumerate(messages) if m.message_id == second.paired_with)
        later = first + rng.randrange(2 * config.batch_size, 10 * config.batch_size)
        messages.insert(min(later, len(messages)), second)

    count = round(config.events * config.duplicate_rate)
    originals = rng.sample(range(config.events), count)
    order: list[Sent] = list(messages)
    later_copies: list[tuple[int, Sent]] = []
    for number, index in enumerate(sorted(originals, reverse=True)):
        original = messages[index]
        duplicate = original.copy(factory.message_id())
        if number % 2 == 0:
            order.insert(order.index(original) + 1, duplicate)
        else:
            position = index + rng.randrange(3 * config.batch_size, 30 * config.batch_size)
            later_copies.append((position, duplicate))
    for position, duplicate in sorted(later_copies, key=lambda item: item[0], reverse=True):
        order.insert(min(position, len(order)), duplicate)
    return order
