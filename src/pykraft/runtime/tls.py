"""TLS contexts from Kafka's ``ssl.*`` keys, for listeners and for the connections nodes and
tools open (Kafka's SslFactory and DefaultSslEngineFactory).

Each key may be overridden per listener by ``listener.name.<lower-case name>.<key>``. Key
stores are PEM (a ``ssl.keystore.location`` file with the key and its chain, or inline
``ssl.keystore.certificate.chain`` + ``ssl.keystore.key``; ``ssl.key.password`` for an
encrypted key) or PKCS12 (``ssl.keystore.password``); trust stores PEM (a file or inline
``ssl.truststore.certificates``) or PKCS12; no trust store means the system's CAs, as Java
falls back to its own. JKS is Java's own format and is refused with a pointer to PKCS12.

Python's :mod:`ssl` loads a key only from a file, so the key and chain, decoded here, reach
it through an anonymous in-memory file (``memfd``) where the platform has one, else a
private (0600) temporary file removed at once. Every refusal is a :class:`ConfigError`
naming the key at fault.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12

from pykraft.errors import ConfigError
from pykraft.security.cipher_suites import TLS12_SUITES, TLS13_SUITES
from pykraft.security.ssl_principal import PrincipalMapper

#: ``ssl.client.auth`` -> what a server asks of its clients.
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
               "required": ssl.CERT_REQUIRED}
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_DEFAULTS = {
    "ssl.keystore.type": "JKS", "ssl.truststore.type": "JKS", "ssl.client.auth": "none",
    "ssl.endpoint.identification.algorithm": "https", "ssl.protocol": "TLSv1.3",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3", "ssl.principal.mapping.rules": "DEFAULT",
}


class SslConfig:
    """The ``ssl.*`` values one listener (or a client) uses, each with the key it came from
    so a refusal names what the operator wrote."""

    def __init__(self, props: Mapping[str, str], listener: str | None = None) -> None:
        self._values: dict[str, tuple[str, str]] = {}
        self._names: dict[str, str] = {}
        self._defaults: Mapping[str, str] = _DEFAULTS
        prefix = f"listener.name.{listener.lower()}." if listener else None
        for key, value in props.items():
            if key.startswith("ssl.") and key not in self._values:
                self._values[key] = (key, value)
        if prefix is not None:
            for key, value in props.items():
                if key.startswith(prefix + "ssl."):
                    self._values[key[len(prefix):]] = (key, value)

    @classmethod
    def renamed(cls, props: Mapping[str, str], names: Mapping[str, str],
                defaults: Mapping[str, str]) -> SslConfig:
        """The ``ssl.*`` settings of a client that names them otherwise (the ZooKeeper
        client's ``zookeeper.ssl.*``): ``names`` maps each ``ssl.*`` key to the key it is
        read from (and named by in refusals), ``defaults`` are that client's."""
        config = cls({})
        config._values = {key: (name, props[name]) for key, name in names.items()
                          if name in props}
        config._names = dict(names)
        config._defaults = {**_DEFAULTS, **defaults}
        return config

    def get(self, key: str) -> str | None:
        entry = self._values.get(key)
        value = entry[1].strip() if entry is not None else self._defaults.get(key, "")
        return value or None

    def name(self, key: str) -> str:
        """The key as written (its listener override when there is one)."""
        entry = self._values.get(key)
        return self._names.get(key, key) if entry is None else entry[0]

    def invalid(self, key: str, reason: str) -> ConfigError:
        return ConfigError(f"Invalid value for configuration {self.name(key)}: {reason}")


@dataclass(frozen=True, slots=True)
class ServerTls:
    """A TLS listener: the context that accepts connections, and the principals of their
    certificates."""

    context: ssl.SSLContext
    principals: PrincipalMapper


def server_tls(props: Mapping[str, str], listener: str) -> ServerTls:
    """The TLS side of an SSL or SASL_SSL listener; it must have a key store."""
    config = SslConfig(props, listener)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _versions(context, config)
    if not _load_keystore(context, config):
        raise ConfigError(f"listener {listener} uses TLS but has no key store: set "
                          "ssl.keystore.location, or ssl.keystore.certificate.chain and "
                          "ssl.keystore.key (ssl.keystore.type PEM)")
    auth = (config.get("ssl.client.auth") or "none").lower()
    if auth not in CLIENT_AUTH:
        raise config.invalid("ssl.client.auth", f"{auth!r} is not one of required, "
                             "requested, none")
    context.verify_mode = CLIENT_AUTH[auth]
    if auth != "none":
        _load_truststore(context, config, ssl.Purpose.CLIENT_AUTH)
    try:
        mapper = PrincipalMapper(config.get("ssl.principal.mapping.rules") or "DEFAULT")
    except ValueError as exc:
        raise config.invalid("ssl.principal.mapping.rules", str(exc)) from None
    return ServerTls(context, mapper)


def client_context(props: Mapping[str, str], listener: str | None = None) -> ssl.SSLContext:
    """The context a node (for ``listener``'s keys) or a tool connects with: the server's
    certificate is always verified, its host name only when
    ``ssl.endpoint.identification.algorithm`` is ``https`` (the default); a key store, when
    given, answers a server that asks for a client certificate."""
    return client_context_of(SslConfig(props, listener))


def client_context_of(config: SslConfig) -> ssl.SSLContext:
    """:func:`client_context` of settings already read."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _versions(context, config)
    algorithm = config.get("ssl.endpoint.identification.algorithm") or ""
    if algorithm.lower() not in ("", "https"):
        raise config.invalid("ssl.endpoint.identification.algorithm",
                             f"{algorithm!r} is not https or empty")
    context.check_hostname = algorithm.lower() == "https"
    _load_truststore(context, config, ssl.Purpose.SERVER_AUTH)
    _load_keystore(context, config)
    return context


def _versions(context: ssl.SSLContext, config: SslConfig) -> None:
    enabled = [p.strip() for p in (config.get("ssl.enabled.protocols") or "").split(",")
               if p.strip()]
    unknown = [p for p in enabled if p not in _VERSIONS]
    if unknown or not enabled:
        raise config.invalid("ssl.enabled.protocols", f"{', '.join(unknown) or 'empty'}: "
                             f"supported protocols are {', '.join(_VERSIONS)}")
    protocol = config.get("ssl.protocol") or "TLSv1.3"
    if protocol not in (*_VERSIONS, "TLS"):
        raise config.invalid("ssl.protocol", f"{protocol!r}: expected TLSv1.2, TLSv1.3 or TLS")
    versions = sorted(_VERSIONS[p] for p in enabled)
    top = versions[-1] if protocol == "TLS" else min(versions[-1], _VERSIONS[protocol])
    if top < versions[0]:
        raise config.invalid("ssl.protocol", f"{protocol} is below every enabled protocol "
                             f"({', '.join(enabled)})")
    context.minimum_version, context.maximum_version = versions[0], top
    _cipher_suites(context, config)


def _cipher_suites(context: ssl.SSLContext, config: SslConfig) -> None:
    """Kafka's ``ssl.cipher.suites`` (Java's names; empty: every suite the JVM, here OpenSSL,
    enables). TLS 1.2 suites go to OpenSSL by its names. TLS 1.3 suites cannot be picked one
    by one from Python (OpenSSL enables them apart from ``set_ciphers``): a list naming none
    keeps TLS 1.3 off, as in Java, where no suite is left to negotiate it with, and a list
    naming some but not all is refused rather than silently widened."""
    key = "ssl.cipher.suites"
    listed = [s.strip() for s in (config.get(key) or "").split(",") if s.strip()]
    if not listed:
        return
    unknown = [s for s in listed if s not in TLS12_SUITES and s not in TLS13_SUITES]
    if unknown:
        raise config.invalid(key, f"{', '.join(unknown)}: not a cipher suite pykraft offers "
                             "(Java's names, e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)")
    tls13 = TLS13_SUITES.intersection(listed)
    if tls13 and tls13 != TLS13_SUITES:
        raise config.invalid(key, "pykraft cannot enable some TLS 1.3 suites without the "
                             f"others: list all of {', '.join(sorted(TLS13_SUITES))} or none "
                             "(then TLS 1.3 is not used)")
    tls12 = [TLS12_SUITES[s] for s in listed if s in TLS12_SUITES]
    low, high = context.minimum_version, context.maximum_version
    if not tls12:
        low = max(low, ssl.TLSVersion.TLSv1_3)  # no TLS 1.2 suite to negotiate with
    if not tls13:
        high = min(high, ssl.TLSVersion.TLSv1_2)
    if low > high:
        raise config.invalid(key, "no listed suite is of an enabled protocol (ssl.enabled."
                             f"protocols, ssl.protocol): {', '.join(listed)}")
    if tls12:
        try:
            context.set_ciphers(":".join(tls12))
        except ssl.SSLError:
            raise config.invalid(key, f"OpenSSL enables none of {', '.join(listed)} (too "
                                 "weak for its security level)") from None
    context.minimum_version, context.maximum_version = low, high


def _store_type(config: SslConfig, key: str) -> str:
    kind = (config.get(key) or "JKS").upper()
    if kind == "JKS":
        raise config.invalid(key, "JKS key stores are not supported: convert the store to "
                             "PKCS12 (keytool -importkeystore -deststoretype PKCS12) or PEM "
                             f"and set {config.name(key)}=PKCS12 or PEM")
    if kind not in ("PEM", "PKCS12"):
        raise config.invalid(key, f"{kind}: expected PKCS12 or PEM")
    return kind


def _read(config: SslConfig, key: str) -> bytes:
    location = config.get(key)
    assert location is not None
    try:
        return Path(location).read_bytes()
    except OSError as exc:
        raise config.invalid(key, f"cannot read {location}: {exc.strerror or exc}") from None


def _load_keystore(context: ssl.SSLContext, config: SslConfig) -> bool:
    """Load the key and chain into ``context``; False when none is configured."""
    location = config.get("ssl.keystore.location")
    inline_chain = config.get("ssl.keystore.certificate.chain")
    inline_key = config.get("ssl.keystore.key")
    if location is None and inline_chain is None and inline_key is None:
        return False
    kind = _store_type(config, "ssl.keystore.type")
    key_password = _password(config, "ssl.key.password")
    if location is None:
        if kind != "PEM" or inline_chain is None or inline_key is None:
            missing = "ssl.keystore.key" if inline_key is None else (
                "ssl.keystore.certificate.chain")
            raise config.invalid(missing if kind == "PEM" else "ssl.keystore.type",
                                 "an inline key store needs ssl.keystore.type=PEM with both "
                                 "ssl.keystore.certificate.chain and ssl.keystore.key")
        key = _pem_key(config, "ssl.keystore.key", inline_key.encode(), key_password)
        chain = _pem_certificates(config, "ssl.keystore.certificate.chain",
                                  inline_chain.encode())
    elif kind == "PEM":
        data = _read(config, "ssl.keystore.location")
        key = _pem_key(config, "ssl.keystore.location", data, key_password)
        chain = _pem_certificates(config, "ssl.keystore.location", data)
    else:
        key, chain = _pkcs12_identity(config, _read(config, "ssl.keystore.location"))
    _use_identity(context, config, key, chain)
    return True


def _load_truststore(context: ssl.SSLContext, config: SslConfig, purpose: ssl.Purpose
                     ) -> None:
    location = config.get("ssl.truststore.location")
    inline = config.get("ssl.truststore.certificates")
    if location is None and inline is None:
        context.load_default_certs(purpose)
        return
    kind = _store_type(config, "ssl.truststore.type")
    if inline is not None:
        if kind != "PEM":
            raise config.invalid("ssl.truststore.type", "ssl.truststore.certificates needs "
                                 "ssl.truststore.type=PEM")
        certificates = _pem_certificates(config, "ssl.truststore.certificates",
                                         inline.encode())
    elif kind == "PEM":
        certificates = _pem_certificates(config, "ssl.truststore.location",
                                         _read(config, "ssl.truststore.location"))
    else:
        certificates = _pkcs12_certificates(config, _read(config, "ssl.truststore.location"))
    context.load_verify_locations(cadata="".join(
        c.public_bytes(serialization.Encoding.PEM).decode() for c in certificates))


def _password(config: SslConfig, key: str) -> bytes | None:
    value = config.get(key)
    return None if value is None else value.encode()


def _pem_key(config: SslConfig, key: str, data: bytes, password: bytes | None
             ) -> PrivateKeyTypes:
    try:
        return serialization.load_pem_private_key(data, password)
    except TypeError as exc:  # a password for a clear key, or none for an encrypted one
        password_key = config.name("ssl.key.password")
        reason = (f"the key is encrypted: set {password_key}" if password is None
                  else f"{password_key} is set but the key is not encrypted")
        raise config.invalid(key, reason) from exc
    except ValueError as exc:
        raise config.invalid(key, f"cannot load the private key: {exc}") from None


def _pem_certificates(config: SslConfig, key: str, data: bytes) -> list[x509.Certificate]:
    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        raise config.invalid(key, f"no PEM certificate found ({exc})") from None
    return certificates


def _pkcs12(config: SslConfig, data: bytes, store: str) -> pkcs12.PKCS12KeyAndCertificates:
    password = _password(config, f"{store}.password")
    try:
        return pkcs12.load_pkcs12(data, password)
    except ValueError as exc:
        raise config.invalid(f"{store}.location", f"cannot load the PKCS12 store ({exc}); "
                             f"is {config.name(store + '.password')} right?") from None


def _pkcs12_identity(config: SslConfig, data: bytes
                     ) -> tuple[PrivateKeyTypes, list[x509.Certificate]]:
    store = _pkcs12(config, data, "ssl.keystore")
    if store.key is None or store.cert is None:
        raise config.invalid("ssl.keystore.location", "the PKCS12 store holds no private "
                             "key with its certificate")
    return store.key, [store.cert.certificate, *(c.certificate for c in store.additional_certs)]


def _pkcs12_certificates(config: SslConfig, data: bytes) -> list[x509.Certificate]:
    store = _pkcs12(config, data, "ssl.truststore")
    certificates = [c.certificate for c in
                    ([store.cert] if store.cert else []) + list(store.additional_certs)]
    if not certificates:
        raise config.invalid("ssl.truststore.location", "the PKCS12 store holds no "
                             "certificate")
    return certificates


def _use_identity(context: ssl.SSLContext, config: SslConfig, key: PrivateKeyTypes,
                  chain: list[x509.Certificate]) -> None:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    pem += b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    with _private_file(pem) as path:
        try:
            context.load_cert_chain(path)
        except ssl.SSLError as exc:
            where = ("ssl.keystore.location" if config.get("ssl.keystore.location")
                     else "ssl.keystore.key")
            raise config.invalid(where, f"the key and certificate do not load together "
                                 f"({exc.reason or exc})") from None


@contextlib.contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """A path holding ``data`` that nobody else can read, gone when the block ends."""
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None:
        fd = memfd_create("pykraft-keystore", os.MFD_CLOEXEC)
        try:
            with os.fdopen(fd, "wb", closefd=False) as file:
                file.write(data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    fd, path = tempfile.mkstemp(prefix="pykraft-keystore-")  # 0600
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        yield path
    finally:
        os.unlink(path)
