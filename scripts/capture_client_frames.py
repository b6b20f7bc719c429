"""Capture the request frames real Kafka clients send, as test fixtures for the codec.

Starts a tiny broker impersonation on 127.0.0.1 (random port) that answers ApiVersions with
pykraft's own response, Metadata with a one-broker empty cluster pointing at itself, and every
other API pykraft speaks with an all-defaults response, so that clients keep talking. Each
client (kcat, confluent-kafka, kafka-python, aiokafka) runs as a child process with a hard
time limit; every distinct request frame of an (api, version) pykraft supports is written to
``tests/fixtures/client_frames/<client>-<api>-v<version>[-n].bin`` (frame without its size
prefix). Existing files in the output directory are overwritten.

Usage: .venv/bin/python scripts/capture_client_frames.py [--out DIR] [--only CLIENT ...]
Needs kcat on PATH and confluent-kafka, kafka-python and aiokafka in the venv; a client that
is missing is reported and skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path

from pykraft.errors import ProtocolError, UnsupportedVersionError
from pykraft.messages import rpc
from pykraft.messages.kafka import API_MESSAGES
from pykraft.messages.kafka.metadata_response import MetadataResponse, MetadataResponseBroker
from pykraft.protocol.api_versions import api_versions_response, encode_unsupported_version_reply
from pykraft.protocol.apis import ApiKey, Listener
from pykraft.protocol.codec import RequestFrame, decode_request, encode_response
from pykraft.protocol.frame import FrameDecoder, encode_frame

CLIENT_TIMEOUT_S = 40.0
BROKER_ID = 1
CLUSTER_ID = "cHlrcmFmdC1jYXB0dXJlAA"
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "client_frames"

CONFLUENT = """
import sys
from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions, ConfigResource
admin = AdminClient({"bootstrap.servers": sys.argv[1], "socket.timeout.ms": 3000})
def attempt(name, call):
    try:
        call()
        print("OK", name)
    except Exception as exc:
        print("FAIL", name, type(exc).__name__, exc)
attempt("list_topics", lambda: admin.list_topics(timeout=5))
attempt("create_topics", lambda: [f.result(5) for f in admin.create_topics(
    [NewTopic("t1", 1, 1)], operation_timeout=3).values()])
attempt("create_partitions", lambda: [f.result(5) for f in admin.create_partitions(
    [NewPartitions("t1", 2)]).values()])
attempt("describe_configs", lambda: [f.result(5) for f in admin.describe_configs(
    [ConfigResource("topic", "t1")]).values()])
attempt("delete_topics", lambda: [f.result(5) for f in admin.delete_topics(["t1"]).values()])
"""

KAFKA_PYTHON = """
import sys
from kafka import KafkaConsumer
from kafka.admin import KafkaAdminClient, NewTopic, NewPartitions
from kafka.admin import ConfigResource, ConfigResourceType
def attempt(name, call):
    try:
        call()
        print("OK", name)
    except Exception as exc:
        print("FAIL", name, type(exc).__name__, exc)
admin = KafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=4000)
attempt("list_topics", admin.list_topics)
attempt("describe_cluster", admin.describe_cluster)
attempt("describe_metadata_quorum", admin.describe_metadata_quorum)
attempt("create_topics", lambda: admin.create_topics([NewTopic("t1", 1, 1)]))
attempt("create_partitions", lambda: admin.create_partitions({"t1": NewPartitions(2)}))
attempt("describe_configs", lambda: admin.describe_configs(
    [ConfigResource(ConfigResourceType.TOPIC, "t1")]))
attempt("alter_configs", lambda: admin.alter_configs(
    [ConfigResource(ConfigResourceType.TOPIC, "t1", configs={"retention.ms": "1000"})]))
attempt("delete_topics", lambda: admin.delete_topics(["t1"]))
admin.close()
consumer = KafkaConsumer(bootstrap_servers=sys.argv[1], request_timeout_ms=4000)
attempt("consumer_topics", consumer.topics)
consumer.close()
"""

AIOKAFKA = """
import asyncio, sys
from aiokafka.admin import AIOKafkaAdminClient, NewTopic, NewPartitions
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
async def attempt(name, call):
    try:
        await asyncio.wait_for(call(), 5)
        print("OK", name)
    except Exception as exc:
        print("FAIL", name, type(exc).__name__, exc)
async def main():
    admin = AIOKafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=4000)
    await attempt("start", admin.start)
    await attempt("list_topics", admin.list_topics)
    await attempt("create_topics", lambda: admin.create_topics([NewTopic("t1", 1, 1)]))
    await attempt("create_partitions", lambda: admin.create_partitions({"t1": NewPartitions(2)}))
    await attempt("describe_configs", lambda: admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, "t1")]))
    await attempt("delete_topics", lambda: admin.delete_topics(["t1"]))
    await admin.close()
asyncio.run(main())
"""


def client_commands(bootstrap: str) -> dict[str, list[str] | None]:
    """Command line per client; None when the client is not installed."""
    kcat = shutil.which("kcat")
    return {
        "kcat": [kcat, "-L", "-b", bootstrap, "-m", "5"] if kcat else None,
        "confluent": [sys.executable, "-c", CONFLUENT, bootstrap],
        "kafka-python": [sys.executable, "-c", KAFKA_PYTHON, bootstrap],
        "aiokafka": [sys.executable, "-c", AIOKAFKA, bootstrap],
    }


# --- responses ---------------------------------------------------------------------------


def metadata_response(port: int) -> MetadataResponse:
    """A one-broker cluster of no topics, the broker this server (so clients stay)."""
    return MetadataResponse(
        brokers=(MetadataResponseBroker(node_id=BROKER_ID, host="127.0.0.1", port=port),),
        cluster_id=CLUSTER_ID, controller_id=BROKER_ID)


def respond(frame: RequestFrame, port: int) -> bytes:
    api_key, version = frame.api_key, frame.api_version
    body: object
    if api_key == ApiKey.API_VERSIONS:
        body = api_versions_response(Listener.BROKER, version)
    elif api_key == ApiKey.METADATA:
        body = metadata_response(port)
    else:  # all Kafka's schema defaults: no error, nothing listed
        body = rpc.response_class(api_key)()
    return encode_response(frame.header.correlation_id, api_key, version, body)


# --- capture server ----------------------------------------------------------------------


class Capture:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.client = "unknown"
        self.port = 0
        self.saved: list[Path] = []
        self.seen: dict[str, list[bytes]] = {}
        self.skipped: set[tuple[int, int]] = set()

    def record(self, frame: bytes, api_key: int, version: int) -> None:
        """Keep each distinct request once (ignoring its correlation id); the first variant
        is ``<client>-<api>-v<version>.bin``, later ones get ``-2``, ``-3``... suffixes."""
        name = f"{self.client}-{API_MESSAGES[api_key][1]}-v{version}"
        variants = self.seen.setdefault(name, [])
        shape = frame[:4] + frame[8:]
        if shape in variants:
            return
        variants.append(shape)
        suffix = "" if len(variants) == 1 else f"-{len(variants)}"
        path = self.out / f"{name}{suffix}.bin"
        path.write_bytes(frame)
        self.saved.append(path)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        try:
            while data := await reader.read(65536):
                for payload in decoder.feed(data):
                    reply = self.handle(payload)
                    if reply is None:
                        return
                    writer.write(encode_frame(reply))
                await writer.drain()
        except (ProtocolError, ConnectionError) as exc:
            print(f"  [{self.client}] connection dropped: {exc}")
        finally:
            writer.close()

    def handle(self, payload: bytes) -> bytes | None:
        """The reply to one request frame, or None to close the connection."""
        try:
            frame = decode_request(payload)
        except UnsupportedVersionError as exc:
            self.skipped.add((exc.api_key or -1, exc.api_version or -1))
            if exc.api_key == ApiKey.API_VERSIONS and exc.correlation_id is not None:
                return encode_unsupported_version_reply(exc.correlation_id, Listener.BROKER)
            return None
        self.record(payload, frame.api_key, frame.api_version)
        return respond(frame, self.port)


async def run_client(name: str, command: list[str]) -> None:
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), CLIENT_TIMEOUT_S)
    except TimeoutError:
        print(f"  [{name}] still running after {CLIENT_TIMEOUT_S}s: killing pid {process.pid}")
        process.kill()
        output, _ = await process.communicate()
    lines = output.decode(errors="replace").splitlines()
    shown = (
        lines[-15:]
        if process.returncode
        else [line for line in lines if line.startswith(("OK", "FAIL"))]
    )
    for line in shown:
        print(f"  [{name}] {line}")
    print(f"  [{name}] exit status {process.returncode}")


async def main(out: Path, only: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    capture = Capture(out)
    server = await asyncio.start_server(capture.serve, "127.0.0.1", 0)
    capture.port = server.sockets[0].getsockname()[1]
    bootstrap = f"127.0.0.1:{capture.port}"
    print(f"capture server on {bootstrap}, writing to {out}")
    async with server:
        for name, command in client_commands(bootstrap).items():
            if only and name not in only:
                continue
            if command is None:
                print(f"  [{name}] not installed: skipped")
                continue
            capture.client = name
            await run_client(name, command)
    print(f"{len(capture.saved)} new frames written")
    for path in capture.saved:
        print(f"  {path.name} ({path.stat().st_size} bytes)")
    if capture.skipped:
        print(f"requests pykraft does not speak (not recorded): {sorted(capture.skipped)}")
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", nargs="*", default=[], help="client names to run")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse_args()
    sys.exit(asyncio.run(main(arguments.out, arguments.only)))
