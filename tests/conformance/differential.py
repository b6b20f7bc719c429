"""Decoded responses of Kafka and pykraft, made comparable field by field.

A response body (kafka-python's ``ApiMessage``, a generated dataclass of
:mod:`pykraft.messages.kafka`, or what a row returns around them: a list of bodies, a string
such as ``CLOSED``) becomes a tree of plain values (:func:`plain`); :func:`normalised` then
rewrites only what two clusters in the same state cannot share, each rule for one reason:

=====================  ==================================================================
What                   Why it is rewritten
=====================  ==================================================================
a ``port`` equal to    each cluster binds free ports; the value becomes the listener's
one of the cluster's   role (``<broker port>``, ``<controller port>``, ``<sasl port>``),
listener ports         so a port of the wrong listener still differs
the cluster's id, as  formatted with a random id each; becomes ``<cluster id>``, another
a ``cluster_id`` or    cluster's id still differs
inside a string
a random UUID (a       topic ids, directory ids and the uuids inside member ids are drawn
``UUID`` value, or a   at random; each becomes ``<uuid n>``, n its order of first
uuid inside a string)  appearance in the response, so two fields naming the same topic
                       must still agree and two naming different ones must still differ;
                       the zero uuid and the metadata topic's fixed id are kept
a non-zero           fetch sessions' ids are drawn at random (KIP-227); one becomes
``session_id``         ``<session n>``, n its order of first appearance, so a fetch
                       naming the session it opened still agrees; 0 (no session) is kept
a list Kafka builds    sorted by its items' names, before any other rule (so uuids are
from a hash set or     numbered in that order): Kafka's order is its hash map's, which no
map (see               client may rely on; each item is still compared field by field
:data:`UNORDERED`)
=====================  ==================================================================

Nothing else is rewritten: node ids are the same on both sides (the oracle harness numbers
controllers from 1 and brokers from 1000 for Kafka and pykraft alike), throttle times are 0
on both (no quota is set), and error messages are compared as sent. What still differs is a
defect, or an exception of :mod:`conformance.kafka_differences` citing Kafka's source.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from conformance.harness import BROKER, CONTROLLER, SASL, ClusterInfo

Plain = None | bool | int | float | str | bytes | list["Plain"] | dict[str, "Plain"]
#: Kafka's ids that are not random: the zero uuid and the metadata topic's.
FIXED_UUIDS = {uuid.UUID(int=0), uuid.UUID(int=1)}
UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MISSING = "<absent>"


def plain(value: Any) -> Plain:
    """A body (or anything a row returns) as nested dicts, lists and scalars."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):  # kafka-python's ApiMessage: raw values, nested as dicts
        return plain(to_dict(json=False))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return _scalar(value)


def _scalar(value: Any) -> Plain:
    if isinstance(value, enum.Enum):
        return _scalar(value.value)
    if isinstance(value, uuid.UUID):
        return str(value) if value not in FIXED_UUIDS else f"<fixed uuid {value.int}>"
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return value
    return repr(value)


#: (API, list field) -> where Kafka's source builds that list from a hash set or map; the
#: list is sorted by its items' ``name`` (or ``topic``, or ``topic_name``).
UNORDERED = {
    ("Metadata", "topics"): "core/src/main/scala/kafka/server/KafkaApis.scala "
                            "handleTopicMetadataRequest (a Set of topic names)",
    ("DescribeConfigs", "configs"): "core/src/main/scala/kafka/server/ConfigHelper.scala "
                                    "allConfigs (a scala mutable.HashMap)",
    ("ElectLeaders", "replica_election_results"):
        "metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java "
        "electLeaders (every topic: topicsByName, a TimelineHashMap)",
    ("AlterReplicaLogDirs", "results"): "core/src/main/scala/kafka/server/KafkaApis.scala "
                                        "handleAlterReplicaLogDirsRequest (result.groupBy)",
}


class Normaliser:
    """The rules of the module docstring for one cluster's responses to ``api``."""

    def __init__(self, cluster: ClusterInfo, api: str) -> None:
        self._ports = {cluster.broker[1]: f"<{BROKER} port>",
                       cluster.controller[1]: f"<{CONTROLLER} port>",
                       cluster.sasl[1]: f"<{SASL} port>"}
        self._cluster_id = cluster.cluster_id
        self._unordered = {field for unordered_api, field in UNORDERED if unordered_api == api}
        self._uuids: dict[str, str] = {}
        self._sessions: dict[int, str] = {}

    def __call__(self, value: Plain, name: str = "") -> Plain:
        if isinstance(value, dict):
            return {key: self(item, key) for key, item in value.items()}
        if isinstance(value, list):
            ordered = sorted(value, key=_name) if name in self._unordered else value
            return [self(item, name) for item in ordered]
        if name == "port" and isinstance(value, int) and value in self._ports:
            return self._ports[value]
        if name == "cluster_id" and value == self._cluster_id:
            return "<cluster id>"
        if name == "session_id" and isinstance(value, int) and value != 0:
            return self._sessions.setdefault(value, f"<session {len(self._sessions) + 1}>")
        if isinstance(value, str):
            return UUID_TEXT.sub(self._uuid, value).replace(self._cluster_id, "<cluster id>")
        return value

    def _uuid(self, found: re.Match[str]) -> str:
        return self._uuids.setdefault(found.group(0), f"<uuid {len(self._uuids) + 1}>")


def _name(item: Plain) -> str:
    if not isinstance(item, dict):
        return ""
    return str(item.get("name", item.get("topic", item.get("topic_name"))))


def normalised(body: Any, cluster: ClusterInfo, api: str) -> Plain:
    """``body``, an answer of ``cluster`` to a request of ``api``, normalised."""
    return Normaliser(cluster, api)(plain(body))


def leaves(tree: Plain, path: str = "") -> Iterator[tuple[str, Plain]]:
    """(path, value) of every scalar; a list's items are ``[i]``, a dict's fields ``.name``;
    an empty list or dict is a leaf of its own, so ``[]`` and ``[x]`` differ."""
    if isinstance(tree, dict) and tree:
        for key, item in tree.items():
            yield from leaves(item, f"{path}.{key}")
    elif isinstance(tree, list) and tree:
        for index, item in enumerate(tree):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path or ".", tree


def differences(kafka: Plain, pykraft: Plain) -> dict[str, tuple[Plain, Plain]]:
    """Path -> (Kafka's value, pykraft's) wherever they differ (:data:`MISSING` where one
    side has no such field or item)."""
    theirs, ours = dict(leaves(kafka)), dict(leaves(pykraft))
    return {path: (theirs.get(path, MISSING), ours.get(path, MISSING))
            for path in sorted(theirs.keys() | ours.keys())
            if theirs.get(path, MISSING) != ours.get(path, MISSING)}
