"""The SCRAM-SHA-256/512 server over image credentials, against scramp's client, alone and
behind the SASL listener's authenticator."""

from __future__ import annotations

import base64
import itertools
from typing import Any

import pytest
import scramp

from pykraft.image.scram import ScramCredential, ScramImage, ScramMechanism
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response, encode_request, request_type
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.runtime.sasl_authenticator import SaslAuthenticator
from pykraft.security.sasl import SaslAuthenticationError
from pykraft.security.sasl_listener import SaslListener
from pykraft.security.scram import ScramExchangeError, ScramSaslServer, scram_factories
from pykraft.security.session import KafkaPrincipal, SecurityProtocol, Session

SALT = b"sixteen-byte-slt"
MECHANISMS = [ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512]


def image_with(*users: tuple[str, str, ScramMechanism]) -> ScramImage:
    mechanisms: dict[ScramMechanism, dict[str, ScramCredential]] = {}
    for user, password, mechanism in users:
        mechanisms.setdefault(mechanism, {})[user] = ScramCredential.from_password(
            mechanism, password, SALT, 4096)
    return ScramImage(mechanisms)


def server(mechanism: ScramMechanism, image: ScramImage) -> ScramSaslServer:
    return ScramSaslServer(mechanism, lambda: image, "server-nonce")


def login(mechanism: ScramMechanism, image: ScramImage, user: str, password: str
          ) -> tuple[ScramSaslServer, scramp.ScramClient]:
    """A full exchange; raises whatever the server raises."""
    ours = server(mechanism, image)
    client = scramp.ScramClient([mechanism.mechanism_name], user, password)
    client.set_server_first(ours.evaluate(client.get_client_first().encode()).decode())
    assert not ours.complete
    client.set_server_final(ours.evaluate(client.get_client_final().encode()).decode())
    return ours, client


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_scramp_client_authenticates_and_verifies_the_server(mechanism: ScramMechanism) -> None:
    image = image_with(("alice", "alice-secret", mechanism))
    ours, _ = login(mechanism, image, "alice", "alice-secret")  # set_server_final checks v=
    assert ours.complete and ours.authorization_id == "alice"
    assert ours.mechanism == mechanism.mechanism_name


def test_server_first_carries_the_credentials_salt_iterations_and_nonce() -> None:
    ours = server(ScramMechanism.SCRAM_SHA_256,
                  image_with(("alice", "pw", ScramMechanism.SCRAM_SHA_256)))
    first = ours.evaluate(b"n,,n=alice,r=client-nonce").decode()
    assert first == (f"r=client-nonceserver-nonce,s={base64.b64encode(SALT).decode()},"
                     "i=4096")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_password_fails_at_the_final_message(mechanism: ScramMechanism) -> None:
    image = image_with(("alice", "alice-secret", mechanism))
    with pytest.raises(ScramExchangeError):
        login(mechanism, image, "alice", "not-it")


def test_unknown_user_and_other_mechanisms_credential_fail_alike() -> None:
    image = image_with(("alice", "pw", ScramMechanism.SCRAM_SHA_256))
    for mechanism, user in [(ScramMechanism.SCRAM_SHA_256, "mallory"),
                            (ScramMechanism.SCRAM_SHA_512, "alice")]:
        with pytest.raises(ScramExchangeError):
            server(mechanism, image).evaluate(b"n,,n=" + user.encode() + b",r=abc")


def test_a_tampered_proof_fails() -> None:
    mechanism = ScramMechanism.SCRAM_SHA_512
    ours = server(mechanism, image_with(("alice", "pw", mechanism)))
    client = scramp.ScramClient([mechanism.mechanism_name], "alice", "pw")
    client.set_server_first(ours.evaluate(client.get_client_first().encode()).decode())
    final = client.get_client_final()
    without_proof, proof = final.rsplit(",p=", 1)
    flipped = bytearray(base64.b64decode(proof))
    flipped[0] ^= 1
    with pytest.raises(ScramExchangeError):
        ours.evaluate(f"{without_proof},p={base64.b64encode(bytes(flipped)).decode()}".encode())
    assert not ours.complete


def test_a_final_message_with_another_nonce_fails() -> None:
    ours = server(ScramMechanism.SCRAM_SHA_256,
                  image_with(("alice", "pw", ScramMechanism.SCRAM_SHA_256)))
    ours.evaluate(b"n,,n=alice,r=abc")
    with pytest.raises(ScramExchangeError):
        ours.evaluate(b"c=biws,r=abcsomething-else,p=" + base64.b64encode(bytes(32)))


@pytest.mark.parametrize("token", [
    b"", b"\xff\xfe", b"hello", b"n,,r=abc", b"n,,n=alice", b"y,x,n=alice,r=a",
    b"n,,n=alice,r=abc,tokenauth=true",
])
def test_malformed_client_first_messages_fail(token: bytes) -> None:
    with pytest.raises(ScramExchangeError):
        server(ScramMechanism.SCRAM_SHA_256,
               image_with(("alice", "pw", ScramMechanism.SCRAM_SHA_256))).evaluate(token)


def test_an_authorization_id_other_than_the_user_fails_in_kafkas_words() -> None:
    ours = server(ScramMechanism.SCRAM_SHA_256,
                  image_with(("alice", "pw", ScramMechanism.SCRAM_SHA_256)))
    with pytest.raises(SaslAuthenticationError, match="Client requested an authorization id "
                                                      "that is different from username"):
        ours.evaluate(b"n,a=admin,n=alice,r=abc")


def test_no_token_after_completion_and_no_identity_before() -> None:
    mechanism = ScramMechanism.SCRAM_SHA_256
    incomplete = server(mechanism, image_with(("alice", "pw", mechanism)))
    with pytest.raises(SaslAuthenticationError):
        _ = incomplete.authorization_id
    ours, _ = login(mechanism, image_with(("alice", "pw", mechanism)), "alice", "pw")
    with pytest.raises(ScramExchangeError):
        ours.evaluate(b"c=biws")


# -- behind the listener's authenticator ------------------------------------------------------

def frame(api_key: int, version: int, **fields: Any) -> bytes:
    body = request_type(api_key, version)(**fields)
    return encode_request(RequestHeader(api_key, version, 3, "test"), body)


def authenticate(image: list[ScramImage], user: str, password: str,
                 mechanism: str = "SCRAM-SHA-512") -> tuple[SaslAuthenticator, Any]:
    """The SaslAuthenticate answer a client gets last (the final, or the first failure)."""
    nonces = (f"n{i}" for i in itertools.count())
    factories = scram_factories(lambda: image[0], lambda: next(nonces))
    authenticator = SaslAuthenticator(
        SaslListener(tuple(factories), factories),
        Session(KafkaPrincipal("User", "ANONYMOUS"), "127.0.0.1:5000", "SASL",
                SecurityProtocol.SASL_PLAINTEXT))
    authenticator.receive(frame(ApiKey.SASL_HANDSHAKE, 1, mechanism=mechanism), 0)
    client = scramp.ScramClient([mechanism], user, password)
    body = None
    for token in (client.get_client_first, client.get_client_final):
        step = authenticator.receive(frame(ApiKey.SASL_AUTHENTICATE, 2,
                                           auth_bytes=token().encode()), 0)
        assert step.reply is not None
        body = decode_response(ApiKey.SASL_AUTHENTICATE, 2, step.reply).body
        if body.error_code != ErrorCode.NONE:
            return authenticator, body
        if token == client.get_client_first:
            client.set_server_first(body.auth_bytes.decode())
    return authenticator, body


def test_the_listener_authenticates_image_users_and_refuses_the_rest_alike() -> None:
    image = [image_with(("alice", "alice-secret", ScramMechanism.SCRAM_SHA_512),
                        ("bob", "bob-secret", ScramMechanism.SCRAM_SHA_256))]
    authenticator, body = authenticate(image, "alice", "alice-secret")
    assert body.error_code == ErrorCode.NONE
    assert authenticator.session.principal == KafkaPrincipal("User", "alice")
    generic = ("Authentication failed during authentication due to invalid credentials with "
               "SASL mechanism SCRAM-SHA-512")
    for user, password in [("alice", "wrong"), ("mallory", "x"), ("bob", "bob-secret")]:
        _, body = authenticate(image, user, password)
        assert (body.error_code, body.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED, generic)
    _, body = authenticate(image, "bob", "bob-secret", "SCRAM-SHA-256")
    assert body.error_code == ErrorCode.NONE


def test_a_removed_credential_fails_the_next_authentication() -> None:
    image = [image_with(("alice", "pw", ScramMechanism.SCRAM_SHA_512))]
    assert authenticate(image, "alice", "pw")[1].error_code == ErrorCode.NONE
    image[0] = ScramImage()
    assert authenticate(image, "alice", "pw")[1].error_code == (
        ErrorCode.SASL_AUTHENTICATION_FAILED)
