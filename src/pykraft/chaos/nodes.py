"""A LocalCluster whose nodes sit behind front doors (see :mod:`pykraft.chaos.links`).

The cluster is made as ``pykraft cluster`` makes one; then each node's listener moves to a
hidden port and its former port, the one every configuration and client names, becomes its
front door (``advertised.listeners``), before the nodes are formatted and started.
"""

from __future__ import annotations

import time
from pathlib import Path

from pykraft.chaos.links import FrontDoor, Links
from pykraft.tools.kafka_runtime import KafkaRuntime
from pykraft.tools.local_cluster import (
    CONTROLLER,
    HOST,
    ClusterError,
    LocalCluster,
    _accepts,
    free_ports,
)

LISTEN_TIMEOUT_S = 60.0  # a Kafka node's JVM on a busy 2-core machine: 15-25 s seen


class ChaosCluster:
    """The processes (a :class:`LocalCluster`), their front doors and the links between."""

    def __init__(self, cluster: LocalCluster, hidden: dict[int, int]) -> None:
        self.cluster = cluster
        self.hidden = hidden
        self.links = Links(lambda: dict(cluster.pids))
        self.doors: dict[int, FrontDoor] = {}

    @classmethod
    def create(cls, base: Path, *, controllers: int, brokers: int,
               properties: dict[str, str], kafka_controllers: int = 0,
               kafka_brokers: int = 0, kafka: KafkaRuntime | None = None) -> ChaosCluster:
        """The cluster ``cluster up`` would make (Kafka's nodes too), behind front doors."""
        cluster = LocalCluster.create(base, controllers, properties, brokers,
                                      format_nodes=False, kafka_controllers=kafka_controllers,
                                      kafka_brokers=kafka_brokers, kafka=kafka)
        hidden = dict(zip(cluster.nodes, free_ports(len(cluster.nodes)), strict=True))
        for node_id, node in cluster.nodes.items():
            listener = "CONTROLLER" if node.role == CONTROLLER else "PLAINTEXT"
            lines = [line for line in node.config.read_text().splitlines()
                     if not line.startswith(("listeners=", "advertised.listeners="))]
            lines += [f"listeners={listener}://{HOST}:{hidden[node_id]}",
                      f"advertised.listeners={listener}://{node.address}"]
            node.config.write_text("".join(line + "\n" for line in lines))
            cluster.format(node_id)
        return cls(cluster, hidden)

    def start_all(self) -> None:
        for node_id, node in self.cluster.nodes.items():
            self.doors[node_id] = FrontDoor(node_id, HOST, node.port, self.hidden[node_id],
                                            self.links)
        for node_id in self.cluster.nodes:
            self.cluster.start(node_id)
        self.wait_listening(list(self.cluster.nodes))

    def kill(self, node_id: int) -> None:
        """Shut the node's door and SIGKILL it, as the kernel closes a killed process's
        listening socket with its connections: its port refuses from then on."""
        self.doors[node_id].shut()
        self.cluster.kill(node_id)

    def stop(self, node_id: int) -> None:
        """Stop the node cleanly, then shut its door."""
        self.cluster.stop(node_id)
        self.doors[node_id].shut()

    def start(self, node_id: int) -> None:
        """Open the node's door and start it again."""
        self.doors[node_id].open()
        self.cluster.start(node_id)

    def wait_listening(self, node_ids: list[int], timeout_s: float = LISTEN_TIMEOUT_S) -> None:
        """Until each node accepts on its hidden port; a ClusterError if one exits first."""
        deadline = time.monotonic() + timeout_s
        for node_id in node_ids:
            while not _accepts(self.hidden[node_id]):
                node = self.cluster.nodes[node_id]
                if not self.cluster.is_running(node_id):
                    raise ClusterError(f"node {node_id} exited during startup; see {node.log}")
                if time.monotonic() > deadline:
                    raise ClusterError(f"node {node_id} does not listen after "
                                       f"{timeout_s:.0f} s; see {node.log}")
                time.sleep(0.05)  # another process: polling is the only way to see it bind

    def not_listening(self) -> list[int]:
        return [node_id for node_id, port in self.hidden.items() if not _accepts(port)]

    def close(self) -> None:
        """Kill what still runs and close the front doors (the files stay)."""
        for node_id in self.cluster.nodes:
            self.cluster.kill(node_id)
        for door in self.doors.values():
            door.close()

