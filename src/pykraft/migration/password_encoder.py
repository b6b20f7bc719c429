"""The password broker configs a ZooKeeper cluster stores encoded (Kafka's
``EncryptingPasswordEncoder`` with ``password.encoder.secret``): decoded so the load writes
them to the metadata log in clear as Kafka's does, encoded so the dual write stores them as
Kafka's does.

The stored form is ``key:value`` pairs separated by commas: ``keyFactoryAlgorithm``
(PBKDF2WithHmacSHA512 or ...SHA1), ``cipherAlgorithm`` (AES/CBC/PKCS5Padding or
AES/GCM/NoPadding), ``keyLength`` (bits), ``salt``, ``iterations``, ``encryptedPassword``,
``passwordLength`` (UTF-16 units), ``initializationVector`` and, for GCM,
``authenticationTagLength``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Callable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from pykraft.errors import PyKraftError
from pykraft.java import java_hash_order, java_string_hash

CBC = "AES/CBC/PKCS5Padding"
"""``password.encoder.cipher.algorithm``'s default."""
GCM = "AES/GCM/NoPadding"
DEFAULT_KEY_FACTORY = "PBKDF2WithHmacSHA512"
"""What Kafka uses when ``password.encoder.keyfactory.algorithm`` is not set (and the JVM has
it, as every JVM Kafka supports does)."""
DEFAULT_KEY_LENGTH = 128
DEFAULT_ITERATIONS = 4096
_SALT_BYTES = 256
_IV_BYTES = {CBC: 16, GCM: 12}
"""The IV the JVM's AES cipher makes when initialised without parameters."""
_GCM_TAG_BITS = 128
_KEY_FACTORIES = {"PBKDF2WithHmacSHA512": "sha512", "PBKDF2WithHmacSHA1": "sha1"}
_AES_BLOCK_BITS = 128


class PasswordDecodeError(PyKraftError, ValueError):
    """Kafka's ``ConfigException("Password could not be decoded")`` and its kin."""


def parse_csv_map(text: str) -> dict[str, str]:
    """Kafka's ``Csv.parseCsvMap``: comma separated, each split at its last colon."""
    found: dict[str, str] = {}
    for pair in (p.strip() for p in text.split(",")) if text else ():
        key, sep, value = pair.rpartition(":")
        if not sep:
            raise PasswordDecodeError(f"encoded password: {pair!r} is not key:value")
        found[key.strip()] = value.strip()
    return found


def decode_password(encoded: str, secret: str) -> str:
    """The clear password of ``encoded`` under ``secret`` (``password.encoder.secret``)."""
    params = parse_csv_map(encoded)
    try:
        digest = _KEY_FACTORIES[params.get("keyFactoryAlgorithm", "PBKDF2WithHmacSHA512")]
        cipher_name = params["cipherAlgorithm"]
        key = hashlib.pbkdf2_hmac(digest, secret.encode("utf-8"),
                                  base64.b64decode(params["salt"], validate=True),
                                  int(params["iterations"]), int(params["keyLength"]) // 8)
        iv = base64.b64decode(params["initializationVector"], validate=True)
        data = base64.b64decode(params["encryptedPassword"], validate=True)
        expected_length = int(params["passwordLength"])
    except (KeyError, ValueError, binascii.Error) as exc:
        raise PasswordDecodeError(f"encoded password: missing or bad parameter {exc}") from None
    try:
        clear = _decrypt(cipher_name, key, iv, data, params)
        password = clear.decode("utf-8")
    except (ValueError, InvalidTag):
        raise PasswordDecodeError("Password could not be decoded") from None
    if len(password.encode("utf-16-le")) // 2 != expected_length:
        raise PasswordDecodeError("Password could not be decoded, sanity check of length failed")
    return password


def _decrypt(cipher_name: str, key: bytes, iv: bytes, data: bytes,
             params: dict[str, str]) -> bytes:
    if cipher_name == "AES/CBC/PKCS5Padding":
        decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
        unpadder = padding.PKCS7(_AES_BLOCK_BITS).unpadder()
        padded = decryptor.update(data) + decryptor.finalize()
        return unpadder.update(padded) + unpadder.finalize()
    if cipher_name == "AES/GCM/NoPadding":
        tag_bytes = int(params.get("authenticationTagLength", "128")) // 8
        body, tag = data[:-tag_bytes], data[-tag_bytes:]
        decryptor = Cipher(algorithms.AES(key), modes.GCM(iv, tag, min_tag_length=tag_bytes)
                           ).decryptor()
        return decryptor.update(body) + decryptor.finalize()
    raise PasswordDecodeError(f"encoded password: unsupported cipher {cipher_name!r}")


def encode_password(password: str, secret: str, random_bytes: Callable[[int], bytes], *,
                    key_factory: str = DEFAULT_KEY_FACTORY, cipher: str = CBC,
                    key_length: int = DEFAULT_KEY_LENGTH,
                    iterations: int = DEFAULT_ITERATIONS) -> str:
    """``EncryptingPasswordEncoder.encode``: a fresh 256-byte salt and IV from
    ``random_bytes`` (a CSPRNG: ``secrets.token_bytes``), the key from ``secret`` by PBKDF2,
    and the parameters as ``key:value`` pairs in the order of Kafka's ``HashMap``."""
    digest = _KEY_FACTORIES.get(key_factory)
    if digest is None or cipher not in _IV_BYTES or key_length not in (128, 192, 256):
        raise PasswordDecodeError(f"cannot encode with {key_factory}, {cipher} and a key of "
                                  f"{key_length} bits")
    salt, iv = random_bytes(_SALT_BYTES), random_bytes(_IV_BYTES[cipher])
    key = hashlib.pbkdf2_hmac(digest, secret.encode("utf-8"), salt, iterations, key_length // 8)
    clear = password.encode("utf-8")
    params = {"keyFactoryAlgorithm": key_factory, "cipherAlgorithm": cipher,
              "keyLength": str(key_length), "salt": _b64(salt), "iterations": str(iterations)}
    if cipher == CBC:
        padder = padding.PKCS7(_AES_BLOCK_BITS).padder()
        encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        data = encryptor.update(padder.update(clear) + padder.finalize()) + encryptor.finalize()
    else:
        gcm = Cipher(algorithms.AES(key), modes.GCM(iv)).encryptor()
        data = gcm.update(clear) + gcm.finalize() + gcm.tag
    params |= {"encryptedPassword": _b64(data),
               "passwordLength": str(len(password.encode("utf-16-le")) // 2),
               "initializationVector": _b64(iv)}
    if cipher == GCM:
        params["authenticationTagLength"] = str(_GCM_TAG_BITS)
    return ",".join(f"{key}:{params[key]}"
                    for key in java_hash_order(list(params), java_string_hash))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")
