"""The TLS context of a migrating controller's ZooKeeper session, from Kafka 3.9's
``zookeeper.ssl.*`` keys, read as Kafka's controller hands them to ZooKeeper's client
(``KafkaServer.zkClientConfigFromKafkaConfig``, then ZooKeeper 3.8's ``X509Util``).

The stores load with the listeners' loader (:mod:`pykraft.runtime.tls`), so the formats and
refusals are the same: PEM and PKCS12, JKS refused with a pointer to PKCS12 (Java's own
format, which Python cannot read). What differs is ZooKeeper's:

* one password, ``zookeeper.ssl.keystore.password``, for a PKCS12 store or an encrypted
  PEM key (ZooKeeper's PEM loader takes the store's password as the key's);
* a store's type, when unset, from its file name (``.pem``, ``.p12``/``.pfx``, ``.jks``), as
  ZooKeeper's ``KeyStoreFileType.fromPropertyValueOrFileName``;
* ``zookeeper.ssl.protocol`` defaults to TLSv1.2, and with no
  ``zookeeper.ssl.enabled.protocols`` it is the only protocol enabled (ZooKeeper enables
  the context's protocol alone);
* the server's host name is verified when ``zookeeper.ssl.endpoint.identification.algorithm``
  is HTTPS in any case (the default), and not for any other value (Kafka sets ZooKeeper's
  ``hostnameVerification`` to ``"HTTPS".equalsIgnoreCase``); the certificate itself always.

``zookeeper.ssl.cipher.suites`` takes Java's suite names, as the listeners' ``ssl.cipher.suites``
(:mod:`pykraft.runtime.tls`). What Python's :mod:`ssl` cannot do as the JVM does is refused
rather than dropped, since each narrows what the session accepts: ``zookeeper.ssl.crl.enable``
and ``zookeeper.ssl.ocsp.enable`` (revocation fetched from the certificates' distribution
points). Kafka's ZooKeeper client
speaks TLS only through ``org.apache.zookeeper.ClientCnxnSocketNetty``; pykraft's session is
kazoo's, but ``zookeeper.clientCnxnSocket`` must still name Netty, so that a configuration
pykraft accepts is one Kafka's controller accepts too.
"""

from __future__ import annotations

import ssl
from pathlib import PurePath

from pykraft.config.server import ServerConfig
from pykraft.errors import ConfigError
from pykraft.runtime.tls import SslConfig, client_context_of

__all__ = ["NETTY_SOCKET", "zk_client_context"]

NETTY_SOCKET = "org.apache.zookeeper.ClientCnxnSocketNetty"
#: ``ssl.*`` (the listeners' loader) -> the ``zookeeper.*`` key it is read from
_NAMES = {
    "ssl.keystore.location": "zookeeper.ssl.keystore.location",
    "ssl.keystore.password": "zookeeper.ssl.keystore.password",
    "ssl.key.password": "zookeeper.ssl.keystore.password",
    "ssl.keystore.type": "zookeeper.ssl.keystore.type",
    "ssl.truststore.location": "zookeeper.ssl.truststore.location",
    "ssl.truststore.password": "zookeeper.ssl.truststore.password",
    "ssl.truststore.type": "zookeeper.ssl.truststore.type",
    "ssl.protocol": "zookeeper.ssl.protocol",
    "ssl.enabled.protocols": "zookeeper.ssl.enabled.protocols",
    "ssl.endpoint.identification.algorithm": "zookeeper.ssl.endpoint.identification.algorithm",
    "ssl.cipher.suites": "zookeeper.ssl.cipher.suites",
}
_PROTOCOLS = ("TLSv1.2", "TLSv1.3", "TLS")
_ALGORITHM = "zookeeper.ssl.endpoint.identification.algorithm"
#: ZooKeeper's ``KeyStoreFileType`` by file name ending
_EXTENSIONS = {".pem": "PEM", ".p12": "PKCS12", ".pfx": "PKCS12", ".jks": "JKS",
               ".bcfks": "BCFKS"}
_UNSUPPORTED = {
    "zookeeper.ssl.crl.enable": "pykraft does not check certificate revocation lists on its "
    "ZooKeeper session: set it to false",
    "zookeeper.ssl.ocsp.enable": "pykraft does not check OCSP on its ZooKeeper session: set "
    "it to false",
}


def zk_client_context(config: ServerConfig) -> ssl.SSLContext | None:
    """The context of the ZooKeeper session; None unless ``zookeeper.ssl.client.enable``.
    Every refusal is a :class:`ConfigError` naming the ``zookeeper.*`` key at fault, so a
    bad store or password stops the controller at start."""
    if not config.get("zookeeper.ssl.client.enable"):
        return None
    props = config.raw
    socket: str = config.get("zookeeper.clientCnxnSocket") or ""
    if socket != NETTY_SOCKET:
        raise ConfigError(f"zookeeper.ssl.client.enable=true needs zookeeper.clientCnxnSocket="
                          f"{NETTY_SOCKET} (Kafka's ZooKeeper client speaks TLS only with it)"
                          f"{f', not {socket}' if socket else ''}")
    for key, reason in _UNSUPPORTED.items():
        if config.get(key):  # true
            raise ConfigError(f"Invalid value {props[key].strip()} for configuration {key}: "
                              f"{reason}")
    values = dict(props)
    values[_ALGORITHM] = ("https" if props.get(_ALGORITHM, "HTTPS").strip().upper()
                          == "HTTPS" else "")
    protocol: str = config.get("zookeeper.ssl.protocol") or "TLSv1.2"
    if protocol not in _PROTOCOLS:  # else refused as the enabled protocols it defaults
        raise ConfigError(f"Invalid value {protocol} for configuration zookeeper.ssl.protocol:"
                          f" expected {', '.join(_PROTOCOLS)}")
    defaults = {"ssl.protocol": protocol,
                "ssl.enabled.protocols": "TLSv1.2,TLSv1.3" if protocol == "TLS" else protocol}
    for store in ("keystore", "truststore"):
        location = (props.get(f"zookeeper.ssl.{store}.location") or "").strip()
        if location and not (props.get(f"zookeeper.ssl.{store}.type") or "").strip():
            defaults[f"ssl.{store}.type"] = _type_of(store, location)
    return client_context_of(SslConfig.renamed(values, _NAMES, defaults))


def _type_of(store: str, location: str) -> str:
    kind = _EXTENSIONS.get(PurePath(location).suffix.lower())
    if kind is None:
        raise ConfigError(f"cannot tell the type of zookeeper.ssl.{store}.location {location} "
                          f"from its name (.pem, .p12, .pfx or .jks): set "
                          f"zookeeper.ssl.{store}.type to PEM or PKCS12")
    return kind
