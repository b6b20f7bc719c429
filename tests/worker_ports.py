"""The ports local clusters of tests take: below Linux's ephemeral ports (ip_local_port_range
starts at 32768), so no outgoing connection of another test takes one meanwhile."""

from __future__ import annotations

PORTS_LOW = 20000
EPHEMERAL_LOW = 32768
