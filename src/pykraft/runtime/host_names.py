"""Whether an ip quota entity's name is an address, as Kafka's ``InetAddress.getByName``
decides: an IP literal, or a host name that resolves.

Kafka's controller (and ``kafka-configs.sh``) look a host name up; so does this, blocking,
which only a name that is no literal pays. A name of digits and dots that is no valid IPv4
literal is refused without a lookup, as Java refuses it.
"""

from __future__ import annotations

import socket

from pykraft.image.client_quotas import literal_ip

_NUMERIC = frozenset("0123456789.")


def ip_resolves(host: str) -> bool:
    if literal_ip(host):
        return True
    if not host or set(host) <= _NUMERIC:
        return False
    try:
        socket.getaddrinfo(host, None)
    except (OSError, UnicodeError):
        return False
    return True
