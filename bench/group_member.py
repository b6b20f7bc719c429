"""One confluent-kafka group member for bench/groups.py, run as its own process so it can be
SIGKILLed (a crash) or SIGTERMed (a clean ``close()``: LeaveGroup).

It subscribes and polls; every rebalance callback prints one line with this machine's
monotonic clock (CLOCK_MONOTONIC, the same in every process), which the bench reads:
``revoked <t>``, ``assigned <t> <p,p,...>``, then on SIGTERM ``closing <t>`` just before
``close()``.

    python bench/group_member.py BOOTSTRAP GROUP TOPIC SESSION_MS HEARTBEAT_MS
"""

from __future__ import annotations

import signal
import sys
import time
from typing import Any

import confluent_kafka

POLL_S = 0.02


def say(*words: object) -> None:
    print(*words, flush=True)


def main(bootstrap: str, group: str, topic: str, session_ms: str, heartbeat_ms: str) -> int:
    closing = False

    def on_term(_signum: int, _frame: Any) -> None:
        nonlocal closing
        closing = True

    signal.signal(signal.SIGTERM, on_term)
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "session.timeout.ms": int(session_ms), "heartbeat.interval.ms": int(heartbeat_ms),
        "auto.offset.reset": "latest"})

    def assigned(_consumer: Any, partitions: list[Any]) -> None:
        say("assigned", time.monotonic(), ",".join(str(p.partition) for p in partitions))

    def revoked(_consumer: Any, _partitions: list[Any]) -> None:
        say("revoked", time.monotonic())

    consumer.subscribe([topic], on_assign=assigned, on_revoke=revoked)
    say("started", time.monotonic())
    while not closing:
        message = consumer.poll(POLL_S)
        if message is not None and message.error() is not None:
            say("error", time.monotonic(), message.error())
    say("closing", time.monotonic())
    consumer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
