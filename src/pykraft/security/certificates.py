"""Certificates for TLS listeners: a CA and the certificates it signs, as PEM or PKCS12 bytes.

``cluster up --secure`` and the tests need a private CA, server certificates valid for the
addresses nodes advertise, and client certificates whose subject becomes the SSL principal.
Everything here is pure: the caller supplies the clock (``now``) and writes the bytes where
it wants; the keys are EC P-256, quick to make and accepted by every TLS stack we meet.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_VALIDITY = datetime.timedelta(days=365)
_ATTRIBUTES = {"CN": NameOID.COMMON_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME,
               "O": NameOID.ORGANIZATION_NAME, "L": NameOID.LOCALITY_NAME,
               "ST": NameOID.STATE_OR_PROVINCE_NAME, "C": NameOID.COUNTRY_NAME}


@dataclass(frozen=True, slots=True)
class Issued:
    """A private key and its certificate chain (leaf first, then the issuers)."""

    key: ec.EllipticCurvePrivateKey
    chain: tuple[x509.Certificate, ...]

    @property
    def certificate(self) -> x509.Certificate:
        return self.chain[0]

    def key_pem(self, password: bytes | None = None) -> bytes:
        """The key as PKCS#8 PEM, encrypted when ``password`` is given (Kafka's PEM
        keystores take PKCS#8, with ``ssl.key.password`` for an encrypted one)."""
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password) if password
            else serialization.NoEncryption())
        return self.key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8, encryption)

    def chain_pem(self) -> bytes:
        return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in self.chain)

    def keystore_pem(self, password: bytes | None = None) -> bytes:
        """One file with the key and the chain: a PEM ``ssl.keystore.location``."""
        return self.key_pem(password) + self.chain_pem()

    def pkcs12(self, password: bytes, alias: str = "pykraft") -> bytes:
        """A PKCS12 keystore holding the key and its chain."""
        return pkcs12.serialize_key_and_certificates(
            alias.encode(), self.key, self.certificate, list(self.chain[1:]) or None,
            serialization.BestAvailableEncryption(password))


def distinguished_name(text: str) -> x509.Name:
    """``CN=alice,OU=eng,O=pykraft`` (most specific first, as RFC 2253 writes it) as a
    subject; only the usual attributes (CN, OU, O, L, ST, C), no escaped commas."""
    attributes = []
    for part in text.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep or key.upper() not in _ATTRIBUTES:
            raise ValueError(f"unsupported attribute {part!r} in {text!r}")
        attributes.append(x509.NameAttribute(_ATTRIBUTES[key.upper()], value))
    return x509.Name(list(reversed(attributes)))


def new_ca(subject: str, now: datetime.datetime, *,
           validity: datetime.timedelta = DEFAULT_VALIDITY) -> Issued:
    """A self-signed CA that may sign leaf certificates."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = distinguished_name(subject)
    builder = (_builder(name, name, key.public_key(), now, validity)
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(
                   digital_signature=True, content_commitment=False, key_encipherment=False,
                   data_encipherment=False, key_agreement=False, key_cert_sign=True,
                   crl_sign=True, encipher_only=False, decipher_only=False), critical=True))
    return Issued(key, (builder.sign(key, hashes.SHA256()),))


def issue(ca: Issued, subject: str, now: datetime.datetime, *,
          hosts: tuple[str, ...] = (), validity: datetime.timedelta = DEFAULT_VALIDITY
          ) -> Issued:
    """A certificate signed by ``ca`` for ``subject``: a server certificate when ``hosts``
    (DNS names or IP addresses, its subjectAltNames) are given, else a client one."""
    key = ec.generate_private_key(ec.SECP256R1())
    usage = [ExtendedKeyUsageOID.CLIENT_AUTH]
    builder = (_builder(distinguished_name(subject), ca.certificate.subject, key.public_key(),
                        now, validity)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True))
    if hosts:
        usage.append(ExtendedKeyUsageOID.SERVER_AUTH)
        builder = builder.add_extension(
            x509.SubjectAlternativeName([_general_name(h) for h in hosts]), critical=False)
    builder = builder.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
    return Issued(key, (builder.sign(ca.key, hashes.SHA256()), *ca.chain))


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey,
             now: datetime.datetime, validity: datetime.timedelta) -> x509.CertificateBuilder:
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
            .public_key(public_key).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + validity))


def _general_name(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
