"""The identity a request arrives with.

Kafka names a listener's protocol (``listener.security.protocol.map``) and gives every
connection a principal: ``User:ANONYMOUS`` on PLAINTEXT, the certificate's distinguished name
on SSL with client authentication, the SASL authorization id on SASL listeners. Handlers get
the :class:`Session` of the connection a request came on; the authorizer judges its
principal and host.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class SecurityProtocol(enum.IntEnum):
    """Kafka's ids for a listener's protocol (BrokerRegistration's ``security_protocol``)."""

    PLAINTEXT = 0
    SSL = 1
    SASL_PLAINTEXT = 2
    SASL_SSL = 3

    @property
    def uses_tls(self) -> bool:
        return self in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)

    @property
    def uses_sasl(self) -> bool:
        return self in (SecurityProtocol.SASL_PLAINTEXT, SecurityProtocol.SASL_SSL)


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """``<type>:<name>``, as ACLs and ``super.users`` spell it (``User:alice``).

    ``token_authenticated``: the client proved a delegation token (SCRAM with
    ``tokenauth=true``) and acts as the token's owner; such a client may not manage tokens.
    Like Kafka's ``KafkaPrincipal.equals``, two principals compare by type and name alone."""

    principal_type: str
    name: str
    token_authenticated: bool = field(default=False, compare=False)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``User:alice`` -> KafkaPrincipal("User", "alice"); ValueError without a type."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type:
            raise ValueError(f"{text!r} is not a principal of the form <type>:<name>")
        return cls(principal_type, name)


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")


@dataclass(frozen=True, slots=True)
class Session:
    """One connection's identity: its principal, the client's ``host:port``, and the
    listener (name and protocol) it connected to."""

    principal: KafkaPrincipal
    client_address: str
    listener_name: str = "PLAINTEXT"
    security_protocol: SecurityProtocol = SecurityProtocol.PLAINTEXT
    #: A broker forwarded the request in an Envelope: the listener and protocol are the
    #: broker's connection's, not the client's (Kafka's ``Request.isForwarded``).
    forwarded: bool = False

    @property
    def client_host(self) -> str:
        """The client's address without its port (an ACL's host)."""
        host = self.client_address.rsplit(":", 1)[0] if ":" in self.client_address else (
            self.client_address)
        return host.strip("[]")


def anonymous(client_address: str) -> Session:
    """A PLAINTEXT connection's session (and the tests' default)."""
    return Session(ANONYMOUS, client_address)
