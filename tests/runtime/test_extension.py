"""The dispatcher's extension point: a server extension's api keys reach its handlers, and
nothing else changes; without one they close the connection like any unknown API."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace

import pytest

from pykraft.config.server import ServerConfig
from pykraft.errors import ConfigError, MalformedMessageError
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.header import RequestHeader, encode_request_header
from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.extension import (
    EXTENSION_KEY,
    RequestHandler,
    checked_handlers,
    load_extension,
)
from pykraft.runtime.listener_dispatch import CloseConnection
from pykraft.security.session import anonymous
from pykraft.testing.append import (
    APPEND_API_KEY,
    APPEND_PROPERTIES,
    AppendExtension,
    encode_append_request,
)

API_KEY = 5000
CLIENT = anonymous("127.0.0.1:5000")


def frame(api_key: int = API_KEY, body: bytes = b"body") -> bytes:
    return encode_request_header(RequestHeader(api_key, 0, 7, "test"), 1) + body


def dispatcher(handlers: Mapping[int, RequestHandler] | None = None) -> Dispatcher:
    node = SimpleNamespace(settings=SimpleNamespace(
        node_id=1, controller=SimpleNamespace(properties={})))
    return Dispatcher(node, None, handlers or {})  # type: ignore[arg-type]


async def echo(request: bytes) -> bytes:
    return b"answer:" + request[-4:]


async def malformed(request: bytes) -> bytes:
    raise MalformedMessageError("bad body")


def test_an_extension_api_key_goes_to_its_handler() -> None:
    served = dispatcher(handlers={API_KEY: echo})
    assert asyncio.run(served.handle(frame(), CLIENT)) == b"answer:body"


def test_a_protocol_error_in_a_handler_closes_the_connection() -> None:
    served = dispatcher(handlers={API_KEY: malformed})
    with pytest.raises(CloseConnection, match=f"malformed request for api key {API_KEY}"):
        asyncio.run(served.handle(frame(), CLIENT))


def test_without_an_extension_its_api_key_closes_the_connection() -> None:
    with pytest.raises(CloseConnection):
        asyncio.run(dispatcher().handle(frame(), CLIENT))
    with pytest.raises(CloseConnection):
        asyncio.run(dispatcher().handle(encode_append_request(1, b"v"), CLIENT))


@pytest.mark.parametrize("api_key", [int(ApiKey.FETCH), 0, 999, 2**15, -1])
def test_extensions_cannot_take_kafka_api_keys_or_non_int16_ones(api_key: int) -> None:
    with pytest.raises(ConfigError, match=f"api key {api_key} is outside 1000..32767"):
        checked_handlers({api_key: echo})
    with pytest.raises(ConfigError):
        dispatcher(handlers={api_key: echo})


@pytest.mark.parametrize(("reference", "expected"), [
    ("pykraft.testing.append", "expected module:attribute"),
    (":AppendExtension", "expected module:attribute"),
    ("pykraft.no_such_module:X", "cannot load"),
    ("pykraft.testing.append:NoSuchExtension", "cannot load"),
])
def test_a_bad_extension_reference_is_a_config_error(reference: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected):
        load_extension(reference)


def test_the_append_properties_load_the_append_extension() -> None:
    extension = load_extension(APPEND_PROPERTIES[EXTENSION_KEY])
    assert isinstance(extension, AppendExtension)
    assert extension.replaces_controller
    assert set(extension.handlers(SimpleNamespace())) == {APPEND_API_KEY}  # type: ignore[arg-type]
    assert checked_handlers(extension.handlers(SimpleNamespace()))  # type: ignore[arg-type]


def test_the_extension_key_is_read_from_the_properties(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("process.roles=controller\nnode.id=1\n"
                    "controller.quorum.voters=1@127.0.0.1:9093\n"
                    "controller.listener.names=CONTROLLER\nlisteners=CONTROLLER://:9093\n"
                    f"log.dirs={tmp_path}\n")
    assert ServerConfig.load(path, {}).get(EXTENSION_KEY) is None
    configured = ServerConfig.load(path, dict(APPEND_PROPERTIES))
    assert configured.get(EXTENSION_KEY) == APPEND_PROPERTIES[EXTENSION_KEY]
