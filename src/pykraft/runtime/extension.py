"""Server extensions: request handlers a process serves beside Kafka's APIs.

Test and benchmark harnesses need requests Kafka does not have (e.g. "append this record
and answer once it is committed", :mod:`pykraft.testing.append`). Rather than carry them in
the server, a process loads at most one extension, named by ``pykraft.server.extension.class``
as ``module:attribute`` (Kafka names its plugins by class the same way). The attribute is
called with no arguments; what it returns serves, on the controller listener, the api keys
its :meth:`ServerExtension.handlers` maps, each in 1000..32767: Kafka numbers its APIs from 0
upwards (below 100 today), so such keys stay clear of every API it has or will soon have.
Each handler gets the whole request frame (size prefix removed) and returns the whole
response frame; a :class:`~pykraft.errors.ProtocolError` closes the connection, as a
malformed Kafka request does. Without an extension those api keys are as unknown as any.

An extension that appends records of its own to the metadata log sets
``replaces_controller``: the controller, which could not replay such records, is then not
run, and the node is the Raft core alone with its committed records counted.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from pykraft.errors import ConfigError
from pykraft.runtime.node import RaftNode

EXTENSION_KEY = "pykraft.server.extension.class"
RequestHandler = Callable[[bytes], Awaitable[bytes]]
EXTENSION_API_KEYS = range(1000, 2**15)


class ServerExtension(Protocol):
    replaces_controller: bool

    def handlers(self, node: RaftNode) -> Mapping[int, RequestHandler]:
        """The api keys this extension serves on ``node``'s controller listener."""
        ...


def load_extension(reference: str) -> ServerExtension:
    """The extension ``module:attribute`` makes; a :class:`ConfigError` if it cannot."""
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f"invalid value {reference!r} for {EXTENSION_KEY}: "
                          "expected module:attribute")
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load {EXTENSION_KEY} {reference!r}: {exc}") from None
    extension: ServerExtension = factory()
    return extension


def checked_handlers(handlers: Mapping[int, RequestHandler]) -> Mapping[int, RequestHandler]:
    """``handlers``, if every api key is in :data:`EXTENSION_API_KEYS`."""
    for api_key in handlers:
        if api_key not in EXTENSION_API_KEYS:
            raise ConfigError(f"{EXTENSION_KEY}: api key {api_key} is outside "
                              f"{EXTENSION_API_KEYS.start}..{EXTENSION_API_KEYS.stop - 1}, "
                              "the keys left to extensions")
    return handlers
