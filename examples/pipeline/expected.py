"""The job's answer computed in plain Python: what the Spark job must write, exactly once."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from events import Event, User

WINDOW = timedelta(minutes=10)

#: (window start, country) -> (events, amount)
Totals = dict[tuple[datetime, str], tuple[int, int]]


def latest_countries(records: Iterable[User]) -> dict[str, str]:
    """The compacted view of the users topic: each key's last value, tombstones removed."""
    latest: dict[str, str | None] = {}
    for record in records:
        latest[record.user] = record.country
    return {user: country for user, country in latest.items() if country is not None}


def totals(events: list[Event], users: Iterable[User]) -> Totals:
    """Events joined to their user's country, counted and summed per 10-minute window:
    the windows the watermark has closed, so all but the last event's (the flush)."""
    countries = latest_countries(users)
    found: Totals = {}
    for event in events[:-1]:
        country = countries.get(event.user)
        if country is None:
            continue
        start = datetime.fromtimestamp(
            event.at.timestamp() // WINDOW.total_seconds() * WINDOW.total_seconds(),
            tz=event.at.tzinfo)
        count, amount = found.get((start, country), (0, 0))
        found[(start, country)] = (count + 1, amount + event.amount)
    return found
