"""A connection muted after a throttled response (KIP-219), as Kafka's ``ThrottledChannel``.

Kafka answers a throttled request at once, with its ``throttle_time_ms``, and then mutes
the connection: the socket server reads nothing more from it until the throttle time has
passed since the quota manager computed it (acks=0 Produce included: no answer is sent, yet
the connection is muted all the same). A listener serves a connection's requests one at a
time in its own task, so the handler marks that task's connection with :func:`mute_for`, and
the listener, once the response is written, waits in :func:`unmuted` before reading the next
request. A context variable carries the mark from the handler to the listener: each
connection's task has its own.
"""

from __future__ import annotations

import asyncio
import contextvars
import time

_MUTED_UNTIL: contextvars.ContextVar[float] = contextvars.ContextVar("muted_until",
                                                                      default=0.0)


def mute_for(throttle_ms: int) -> None:
    """Mute this task's connection for ``throttle_ms`` from now (a longer mute stays)."""
    if throttle_ms > 0:
        until = time.monotonic() + throttle_ms / 1000
        _MUTED_UNTIL.set(max(_MUTED_UNTIL.get(), until))


async def unmuted() -> None:
    """Until this task's connection may be read again. The clock is read, not the loop's
    (uvloop's is the time its iteration began, behind by that iteration's work), and the
    wait is taken up again if its timer fired early by the same lag."""
    until = _MUTED_UNTIL.get()
    while (remaining := until - time.monotonic()) > 0:
        await asyncio.sleep(remaining)
