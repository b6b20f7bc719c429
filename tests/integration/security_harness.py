"""Helpers for the security tests on real processes: clusters laid out node by node (each
node's own properties, as TLS keystores differ per node), requests written by hand, and the
one-line refusals a node logs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pykraft.config.server import ServerConfig
from pykraft.ids import random_uuid, uuid_to_str
from pykraft.protocol.codec import encode_request, request_type
from pykraft.protocol.frame import encode_frame
from pykraft.protocol.header import RequestHeader
from pykraft.tools.local_cluster import LocalCluster, NodeFiles
from pykraft.tools.storage_tool import FormatRequest, QuorumMode, format_storage

#: The markers of a failure the process did not handle: a log with one of them is a bug.
UNHANDLED = ("Traceback (most recent call last)", "event=fatal", "Task exception was never",
             "Exception in callback", "Unhandled exception")


def request_frame(api_key: int, version: int, **fields: Any) -> bytes:
    """One size-prefixed request, as a client writes it on the socket."""
    body = request_type(api_key, version)(**fields)
    return encode_frame(encode_request(RequestHeader(api_key, version, 1, "t"), body))


def write_node(node: NodeFiles, props: Mapping[str, str]) -> None:
    node.directory.mkdir(parents=True, exist_ok=True)
    node.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


def formatted_cluster(base: Path, nodes: list[NodeFiles],
                      scram: tuple[str, ...] = ()) -> LocalCluster:
    """The nodes (configs written) formatted with one new cluster id, not started."""
    cluster_id = uuid_to_str(random_uuid())
    for node in nodes:
        format_storage(FormatRequest(config=ServerConfig.load(node.config),
                                     cluster_id=cluster_id, mode=QuorumMode.STATIC,
                                     scram=scram))
    return LocalCluster(base, cluster_id, nodes)


def log_lines(path: Path, *needles: str) -> list[str]:
    """The lines of a node's log holding every one of ``needles``."""
    if not path.exists():
        return []
    return [line for line in path.read_text(errors="replace").splitlines()
            if all(n in line for n in needles)]


def failed_authentications(path: Path, *needles: str) -> list[str]:
    """Kafka's "Failed authentication with /host (reason)" lines, as pykraft logs them."""
    return log_lines(path, "event=failed_authentication", *needles)


def unhandled(path: Path) -> list[str]:
    """Lines of a node's log that show a failure it did not handle."""
    text = path.read_text(errors="replace")
    return [line for line in text.splitlines() if any(m in line for m in UNHANDLED)]
