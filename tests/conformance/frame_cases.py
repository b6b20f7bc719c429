"""Real clients' captured request frames (tests/fixtures/client_frames) as rows of the
differential oracle.

Each frame is sent byte for byte, its correlation id and client id as the client wrote
them, to the broker listener (the clients were captured talking to a broker). The frames
are taken in the order each client sent them (client, then correlation id), so a client's
CreateTopics finds its topic absent, its CreatePartitions and DescribeConfigs find it
created and its DeleteTopics removes it before the next client creates it again. The
topic they name (``t1``) is no other row's.

A frame that changes a topic's state is followed by the topic's state as the broker sees
it once the change reached it (:func:`conformance.cases.topic_state`), so the next frame
finds both clusters alike and the change itself is compared, not just its answer.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from conformance.cases import ABSENT, topic_state
from conformance.differential import Plain, plain
from conformance.harness import BROKER, ClusterInfo, Run
from conformance.wire import exchange, framed, generated_answer
from pykraft.messages import rpc
from pykraft.messages.kafka.create_partitions_request import CreatePartitionsRequest
from pykraft.messages.kafka.create_topics_request import CreateTopicsRequest
from pykraft.messages.kafka.delete_topics_request import DeleteTopicsRequest

FRAMES_DIR = Path(__file__).parent.parent / "fixtures" / "client_frames"
_NAME = re.compile(r"(?P<client>[a-z-]+?)-(?P<api>[a-z_]+)-v(?P<version>\d+)(-\d+)?")


@dataclass(frozen=True)
class Frame:
    """One captured request frame (without its size prefix) and what it asks."""

    path: Path

    @cached_property
    def wire(self) -> bytes:
        return self.path.read_bytes()

    @property
    def client(self) -> str:
        found = _NAME.fullmatch(self.path.stem)
        if found is None:
            raise ValueError(f"{self.path.name} is not <client>-<api>-v<version>[-n].bin")
        return found.group("client")

    @property
    def api_key(self) -> int:
        return int(struct.unpack_from(">h", self.wire)[0])

    @property
    def version(self) -> int:
        return int(struct.unpack_from(">h", self.wire, 2)[0])

    @property
    def correlation_id(self) -> int:
        return int(struct.unpack_from(">i", self.wire, 4)[0])

    @property
    def case(self) -> str:
        """The row's case name in the table."""
        return f"frame:{self.path.stem}"

    @cached_property
    def body(self) -> object:
        """The request body, read by the generated classes (the bytes sent are the file's,
        not a re-encoding; bytes after the body, which Kafka ignores, are left unread)."""
        return rpc.decode_request(self.wire).body


def frames() -> list[Frame]:
    """Every captured frame, each client's in the order it sent them."""
    found = [Frame(path) for path in FRAMES_DIR.glob("*.bin")]
    return sorted(found, key=lambda f: (f.client, f.correlation_id, f.path.name))


def send(frame: Frame, cluster: ClusterInfo) -> Plain:
    """The response body to ``frame`` on ``cluster``'s broker (decoded by the generated
    classes at the frame's version) with two more fields no response has: ``header`` (the
    correlation id echoed) and, for a frame that changes topics, ``then`` (their states
    afterwards)."""
    payload = exchange(cluster.broker, framed(frame.wire))
    answer = generated_answer(frame.api_key, frame.version, payload)
    body = plain(answer.body)
    assert isinstance(body, dict)
    body["header"] = {"correlation_id": answer.correlation_id}
    settles = STATES.get(frame.api_key)
    if settles is not None:
        run = Run(cluster, frame.path.stem, frame.case, BROKER, frame.version)
        body["then"] = {name: topic_state(run, name, state)
                        for name, state in settles(frame.body)}
    return body


Settles = list[tuple[str, str]]


def _created(body: object) -> Settles:
    assert isinstance(body, CreateTopicsRequest)
    return [] if body.validate_only else [
        (t.name, f"{t.num_partitions} partitions") for t in body.topics]


def _partitioned(body: object) -> Settles:
    assert isinstance(body, CreatePartitionsRequest)
    return [] if body.validate_only else [
        (t.name, f"{t.count} partitions") for t in body.topics]


def _deleted(body: object) -> Settles:
    """Named by ``topic_names`` before v6, by ``topics`` from v6 (the other one is empty)."""
    assert isinstance(body, DeleteTopicsRequest)
    names = [*body.topic_names, *(topic.name for topic in body.topics)]
    return [(name, ABSENT) for name in names if name is not None]


#: API key -> the (topic, state it settles on) of each topic a request of it changes:
#: CreateTopics, CreatePartitions, DeleteTopics.
STATES: dict[int, Callable[[object], Settles]] = {19: _created, 37: _partitioned,
                                                  20: _deleted}
