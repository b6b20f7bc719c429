"""A Kafka-protocol client connection, as Kafka's NetworkClient runs one.

It opens with ApiVersions (answered in v0 format with UNSUPPORTED_VERSION by a server that
lacks our version, after which we retry at the server's highest, as Kafka's clients do),
negotiates per API the highest version both sides speak, then carries one request at a time.
Callers hand in and get back the generated class of the API, which serves every version: it
is written and read at the version negotiated with the peer.
"""

from __future__ import annotations

import asyncio
import itertools
import ssl

from pykraft import __version__
from pykraft.errors import (
    NetworkError,
    ProtocolError,
    RequestTooLargeError,
    UnsupportedVersionError,
)
from pykraft.protocol.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    VersionRanges,
    negotiate,
    ranges_from_response,
)
from pykraft.protocol.apis import API_SPECS, ApiKey
from pykraft.protocol.codec import (
    Body,
    DecodedBody,
    api_key_of,
    decode_response,
    encode_request,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.frame import DEFAULT_MAX_FRAME_SIZE
from pykraft.protocol.header import RequestHeader
from pykraft.runtime.codec_thread import off_loop, off_loop_above, off_loop_if_large
from pykraft.runtime.sasl_client import SASL_RANGES, SaslCredentials, SaslSession, authenticate
from pykraft.runtime.streams import FrameStream

API_VERSIONS_MAX = API_SPECS[ApiKey.API_VERSIONS].max_version
CLIENT_SOFTWARE_NAME = "pykraft"

#: Everything that means "this connection is unusable now".
CONNECTION_ERRORS = (OSError, EOFError, TimeoutError, ProtocolError, NetworkError)


class ClientConnection:
    """One open connection with negotiated versions. Concurrent requests are pipelined as
    Kafka's clients do (``max.in.flight.requests.per.connection``): each is written whole,
    in turn, and its response read in the same turn, the broker answering in order."""

    def __init__(self, stream: FrameStream, client_id: str, versions: dict[int, int | None],
                 max_request_bytes: int | None = None) -> None:
        self._stream = stream
        self._client_id = client_id
        self.versions = versions
        self._max_request_bytes = max_request_bytes
        self._correlation = itertools.count(1)
        self._sasl: SaslSession | None = None
        self._writing = asyncio.Lock()
        self._last_read: asyncio.Future[None] | None = None  # the previous request's turn

    @classmethod
    async def open(
        cls, host: str, port: int, *, client_id: str, ours: VersionRanges,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, tls: ssl.SSLContext | None = None,
        sasl: SaslCredentials | None = None, max_request_bytes: int | None = None,
    ) -> ClientConnection:
        """Connect (over TLS when ``tls`` is given), negotiate versions and, with ``sasl``,
        authenticate (:mod:`pykraft.runtime.sasl_client`). ``max_request_bytes``: the
        peer's ``socket.request.max.bytes``, if known; a larger request is not sent
        (:class:`RequestTooLargeError`), since the peer would only close the connection."""
        stream = await FrameStream.connect(host, port, max_frame_size, tls=tls)
        try:
            ours = ours if sasl is None else {**ours, **SASL_RANGES}
            connection = cls(stream, client_id, await _negotiate(stream, client_id, ours),
                             max_request_bytes)
            if sasl is not None:
                connection._sasl = SaslSession(sasl)
                await connection._sasl.authenticate(connection._send)
        except BaseException:
            stream.close()
            raise
        return connection

    async def request(self, body: Body, client_id: str | None = None) -> DecodedBody:
        """Send ``body`` at the negotiated version of its API and return the response;
        first re-authenticate if the SASL session's lifetime is nearly over. ``client_id``:
        the header's, when not this connection's (a forwarded request keeps its client's,
        as inside Kafka's envelope, so it is no larger than the request the broker took)."""
        if self._sasl is not None and self._sasl.due():
            await self._sasl.authenticate(self._send)
        return await self._send(body, client_id)

    async def _send(self, body: Body, client_id: str | None = None) -> DecodedBody:
        api_key = api_key_of(body)
        version = self.versions.get(api_key)
        if version is None:
            raise UnsupportedVersionError(
                f"the peer speaks no version of api {api_key} that we do", api_key=api_key
            )
        async with self._writing:
            header = RequestHeader(api_key, version, next(self._correlation),
                                   self._client_id if client_id is None else client_id)
            correlation_id = header.correlation_id
            # a large request forwarded by a broker: coded off the loop, as its original was
            payload = await off_loop_if_large(encode_request, header, body)
            if self._max_request_bytes is not None and len(payload) > self._max_request_bytes:
                raise RequestTooLargeError(
                    f"the request is {len(payload)} bytes, more than the "
                    f"{self._max_request_bytes} the peer accepts (socket.request.max.bytes)")
            await self._stream.write_frame(payload)
            previous, turn = self._last_read, asyncio.get_running_loop().create_future()
            self._last_read = turn
        try:
            if previous is not None:
                await asyncio.shield(previous)  # the responses before ours come first
            return await _read_response(self._stream, api_key, version, correlation_id)
        finally:
            turn.set_result(None)

    def close(self) -> None:
        self._stream.close()


async def _negotiate(stream: FrameStream, client_id: str, ours: VersionRanges) -> (
    dict[int, int | None]
):
    version = API_VERSIONS_MAX
    body = ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE_NAME,
                              client_software_version=__version__)
    for attempt in range(2):
        response = await _round_trip(stream, client_id, ApiKey.API_VERSIONS, version,
                                     attempt + 1, body)
        assert isinstance(response, ApiVersionsResponse)
        theirs = ranges_from_response(response)
        if response.error_code == ErrorCode.NONE:
            return negotiate(ours, theirs)
        their_max = theirs.get(ApiKey.API_VERSIONS, (0, -1))[1]
        if response.error_code != ErrorCode.UNSUPPORTED_VERSION or their_max >= version:
            break
        version = their_max
    raise ProtocolError(f"ApiVersions failed with error {response.error_code}")


async def _round_trip(stream: FrameStream, client_id: str, api_key: int, version: int,
                      correlation_id: int, body: Body) -> DecodedBody:
    header = RequestHeader(api_key, version, correlation_id, client_id)
    await stream.write_frame(encode_request(header, body))
    return await _read_response(stream, api_key, version, correlation_id)


async def _read_response(stream: FrameStream, api_key: int, version: int,
                         correlation_id: int) -> DecodedBody:
    frame = await stream.read_frame()
    if frame is None:
        raise NetworkError(f"connection to {stream.peer} closed while waiting for a response")
    response = (await off_loop(decode_response, api_key, version, frame)
                if len(frame) > off_loop_above(api_key)
                else decode_response(api_key, version, frame))
    if response.correlation_id != correlation_id:
        raise ProtocolError(
            f"response correlation id {response.correlation_id}, expected {correlation_id}"
        )
    return response.body


async def authenticate_stream(stream: FrameStream, client_id: str,
                              credentials: SaslCredentials) -> None:
    """SASL on a stream whose later requests this module does not send (a migrating
    controller's LeaderAndIsr, UpdateMetadata and StopReplica to ZK brokers): ApiVersions for
    the two SASL APIs, then the exchange, as Kafka's SaslClientAuthenticator opens every
    connection. No re-authentication: a broker that ends the session closes the connection,
    and the caller's next one authenticates again."""
    versions = await _negotiate(stream, client_id, SASL_RANGES)
    await authenticate(ClientConnection(stream, client_id, versions)._send, credentials)


async def open_with_timeout(host: str, port: int, *, client_id: str, ours: VersionRanges,
                            timeout_s: float, tls: ssl.SSLContext | None = None,
                            sasl: SaslCredentials | None = None) -> ClientConnection:
    """:meth:`ClientConnection.open` bounded by ``timeout_s`` (NetworkError on expiry)."""
    try:  # asyncio.timeout, not wait_for: see pykraft.runtime.waits
        async with asyncio.timeout(timeout_s):
            return await ClientConnection.open(host, port, client_id=client_id, ours=ours,
                                               tls=tls, sasl=sasl)
    except TimeoutError:
        raise NetworkError(f"no ApiVersions answer from {host}:{port} within "
                           f"{timeout_s:.1f} s") from None
