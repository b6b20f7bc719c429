"""The pipeline's input: purchase events keyed by user, and a compacted topic of users.

Everything is generated from a seed, so the job's output can be checked against
:mod:`expected`. Events come in event-time order (3 s apart, a little disorder within a
partition's stream never exceeds the job's watermark delay); some users change country
(the latest value wins), some are deleted by a tombstone (their events drop out of the
join), and one last event far in the future closes every real window (the job writes a
window only once the watermark has passed it).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

EVENTS_TOPIC = "events"
USERS_TOPIC = "users"
TOTALS_TOPIC = "country-totals"
COUNTRIES = ("DE", "FR", "JP", "BR", "US")
START = datetime(2026, 1, 1, tzinfo=UTC)
SPACING = timedelta(seconds=3)
#: The event past every real window (its own window is never closed, so never written).
FLUSH_AT = timedelta(days=1)


@dataclass(frozen=True)
class Event:
    user: str
    amount: int
    at: datetime

    def value(self) -> bytes:
        return json.dumps({"user": self.user, "amount": self.amount,
                           "ts": self.at.isoformat().replace("+00:00", "Z")}).encode()


@dataclass(frozen=True)
class User:
    """One record of the users topic: ``country`` None is a tombstone."""

    user: str
    country: str | None

    def value(self) -> bytes | None:
        return None if self.country is None else json.dumps({"country": self.country}).encode()


def users(seed: int, count: int) -> list[User]:
    """Every user once, then a fifth of them moved and a tenth deleted (in that order)."""
    rng = random.Random(seed)
    names = [f"u{n:03d}" for n in range(count)]
    records = [User(name, rng.choice(COUNTRIES)) for name in names]
    records += [User(name, rng.choice(COUNTRIES)) for name in rng.sample(names, count // 5)]
    records += [User(name, None) for name in rng.sample(names, count // 10)]
    return records


def events(seed: int, count: int, user_count: int) -> list[Event]:
    """``count`` events in event-time order, then the flush event."""
    rng = random.Random(seed + 1)
    made = [Event(f"u{rng.randrange(user_count):03d}", rng.randrange(1, 100),
                  START + index * SPACING) for index in range(count)]
    last = made[-1].at if made else START
    return [*made, Event("u000", 0, last + FLUSH_AT)]
