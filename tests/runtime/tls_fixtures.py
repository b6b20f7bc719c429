"""Certificates for the TLS tests: one CA, a server certificate for 127.0.0.1 and localhost,
a client certificate, and a second CA nobody trusts."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pykraft.security.certificates import Issued, issue, new_ca

CLIENT_DN = "CN=client,OU=test,O=pykraft"
NOW = datetime.datetime.now(datetime.UTC)


@dataclass(frozen=True)
class Pki:
    ca: Issued
    server: Issued
    client: Issued
    stranger_ca: Issued
    stranger: Issued


@cache
def pki() -> Pki:
    ca = new_ca("CN=pykraft-test-ca", NOW)
    stranger_ca = new_ca("CN=stranger-ca", NOW)
    return Pki(ca=ca, server=issue(ca, "CN=server", NOW, hosts=("127.0.0.1", "localhost")),
               client=issue(ca, CLIENT_DN, NOW), stranger_ca=stranger_ca,
               stranger=issue(stranger_ca, "CN=stranger", NOW, hosts=("127.0.0.1",)))


def pem_files(directory: Path, issued: Issued, ca: Issued, name: str,
              key_password: bytes | None = None) -> dict[str, str]:
    """``ssl.*`` keys for a PEM key store file and a PEM trust store file."""
    keystore = directory / f"{name}-keystore.pem"
    truststore = directory / f"{name}-truststore.pem"
    keystore.write_bytes(issued.keystore_pem(key_password))
    truststore.write_bytes(ca.chain_pem())
    props = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
             "ssl.truststore.type": "PEM", "ssl.truststore.location": str(truststore)}
    if key_password is not None:
        props["ssl.key.password"] = key_password.decode()
    return props


def trust_only(directory: Path, ca: Issued, name: str) -> dict[str, str]:
    """A client's ``ssl.*`` keys with a trust store and no key store."""
    truststore = directory / f"{name}-truststore.pem"
    truststore.write_bytes(ca.chain_pem())
    return {"ssl.truststore.type": "PEM", "ssl.truststore.location": str(truststore)}
