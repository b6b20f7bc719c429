"""What a SASL listener accepts, from Kafka's keys: its enabled mechanisms, a factory of
fresh servers for each, and each one's ``connections.max.reauth.ms``.

``sasl.enabled.mechanisms`` (GSSAPI by default, which pykraft lacks), PLAIN's users from the
listener's PlainLoginModule and the re-authentication lifetime are read with their
``listener.name.<listener>.`` overrides. SCRAM mechanisms are accepted here; their servers,
which read the metadata image's credentials, are added with
:meth:`SaslListener.with_factories` once the image exists.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pykraft.config.properties import int_property
from pykraft.errors import ConfigError
from pykraft.security.jaas import listener_jaas, listener_value
from pykraft.security.plain import PLAIN, plain_server_factory
from pykraft.security.sasl import SaslServer, SaslServerFactories

SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
REAUTH_KEY = "connections.max.reauth.ms"
MAX_RECEIVE_SIZE = 524288  # Kafka's default sasl.server.max.receive.size


@dataclass(frozen=True, slots=True)
class SaslListener:
    """What one SASL listener accepts: its enabled mechanisms in order, a factory of fresh
    servers for each, and ``connections.max.reauth.ms`` per mechanism (0: no lifetime)."""

    mechanisms: tuple[str, ...]
    factories: SaslServerFactories
    reauth_ms: Mapping[str, int] = dataclasses.field(default_factory=dict)
    #: ``sasl.server.max.receive.size``: the largest frame read before authentication.
    max_receive_size: int = MAX_RECEIVE_SIZE

    def with_factories(self, extra: SaslServerFactories) -> SaslListener:
        """This listener with ``extra``'s servers for the mechanisms it enables (SCRAM's,
        over the metadata image); an enabled mechanism left without a server is refused
        at the handshake as unsupported."""
        added = {m: factory for m, factory in extra.items() if m in self.mechanisms}
        return dataclasses.replace(self, factories={**self.factories, **added})


def sasl_listener(props: Mapping[str, str], listener: str) -> SaslListener:
    """A SASL listener from Kafka's keys: ``sasl.enabled.mechanisms`` (GSSAPI by default,
    which pykraft lacks), PLAIN's users from the listener's PlainLoginModule, and
    ``connections.max.reauth.ms``, each with its ``listener.name.<listener>.`` override.
    SCRAM mechanisms are accepted here; their servers, which read the metadata image's
    credentials, are added by :meth:`SaslListener.with_factories` once the image exists."""
    text = listener_value(props, listener, "sasl.enabled.mechanisms") or "GSSAPI"
    mechanisms = tuple(m.strip() for m in text.split(",") if m.strip())
    factories: dict[str, Callable[[], SaslServer]] = {}
    reauth_ms: dict[str, int] = {}
    for mechanism in mechanisms:
        if mechanism == PLAIN:
            module = listener_jaas(props, listener, mechanism)
            if module is None:
                raise ConfigError(f"no JAAS configuration for PLAIN on listener {listener}: "
                                  f"set listener.name.{listener.lower()}.plain.sasl.jaas.config")
            factories[mechanism] = plain_server_factory(module.options)
        elif mechanism not in SCRAM_MECHANISMS:
            raise ConfigError(f"sasl.enabled.mechanisms of listener {listener} names "
                              f"{mechanism}, which pykraft does not support (PLAIN, "
                              "SCRAM-SHA-256, SCRAM-SHA-512)")
        value = listener_value(props, listener, REAUTH_KEY, mechanism) or "0"
        reauth_ms[mechanism] = int_property({REAUTH_KEY: value}, REAUTH_KEY, 0) or 0
    if not mechanisms:
        raise ConfigError(f"sasl.enabled.mechanisms of listener {listener} is empty")
    max_receive = int_property(props, "sasl.server.max.receive.size", 1)
    return SaslListener(mechanisms, factories, reauth_ms,
                        MAX_RECEIVE_SIZE if max_receive is None else max_receive)
