"""Network faults between two nodes: a front-door TCP proxy per node.

Every node listens on a hidden port and advertises its front door (the address in
``cluster.json``, ``controller.quorum.voters`` and the brokers' ``advertised.listeners``),
so all traffic to a node, from peers and clients alike, passes its front door. On each
accepted connection the front door asks the kernel who connected: the peer's socket is
found in ``/proc/net/tcp`` and its inode among the file descriptors of the cluster's node
processes. Cutting the link A-B then

* closes every open connection from A to B's front door and from B to A's (a reset), and
* holds every new one between them open but silent (a black hole) until the link heals,
  so requests time out as they would across a real partition.

Connections from anything that is not a node (the workload's clients, tools) always pass.
Chosen over network namespaces because it needs no privileges, no kernel modules and no
second address per node, and a crashed run leaves nothing behind in the host's network.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path

Link = frozenset[int]
_CHUNK = 65536


def link(a: int, b: int) -> Link:
    return frozenset((a, b))


def socket_inode(local_port: int, remote_port: int, tables: tuple[str, ...] = (
        "/proc/net/tcp", "/proc/net/tcp6")) -> int | None:
    """The inode of the loopback socket ``local_port`` -> ``remote_port`` (None if gone)."""
    wanted = (f":{local_port:04X}", f":{remote_port:04X}")
    for table in tables:
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[1].endswith(wanted[0]) and fields[2].endswith(wanted[1]):
                    return int(fields[9])
    return None


def owner(inode: int, pids: Mapping[int, int]) -> int | None:
    """Which node (of node id -> pid) holds the socket ``inode``."""
    target = f"socket:[{inode}]"
    for node_id, pid in pids.items():
        fd_dir = f"/proc/{pid}/fd"
        with contextlib.suppress(OSError):
            for fd in os.listdir(fd_dir):
                with contextlib.suppress(OSError):
                    if os.readlink(f"{fd_dir}/{fd}") == target:
                        return node_id
    return None


class Links:
    """The cut links and the connections each link carries, shared by the front doors."""

    def __init__(self, pids: Callable[[], Mapping[int, int]]) -> None:
        self._pids = pids
        self._lock = threading.Lock()
        self._cut: set[Link] = set()
        self._open: dict[Link, list[socket.socket]] = defaultdict(list)
        self._held: dict[Link, list[socket.socket]] = defaultdict(list)

    def identify(self, peer_port: int, front_port: int) -> int | None:
        inode = socket_inode(peer_port, front_port)
        return None if inode is None else owner(inode, dict(self._pids()))

    def cut(self, a: int, b: int) -> None:
        with self._lock:
            self._cut.add(link(a, b))
            doomed = self._open.pop(link(a, b), [])
        for sock in doomed:
            close(sock)

    def heal(self, a: int, b: int) -> None:
        with self._lock:
            self._cut.discard(link(a, b))
            held = self._held.pop(link(a, b), [])
        for sock in held:
            close(sock)

    def heal_all(self) -> None:
        with self._lock:
            cut = list(self._cut)
        for pair in cut:
            self.heal(*sorted(pair))

    def cut_links(self) -> list[tuple[int, int]]:
        with self._lock:
            return sorted((min(pair), max(pair)) for pair in self._cut)

    def held(self) -> int:
        """How many sockets cut links hold silent now."""
        with self._lock:
            return sum(map(len, self._held.values()))

    def admit(self, pair: Link | None, sockets: tuple[socket.socket, ...]) -> bool:
        """Whether a new connection may flow; a cut link's is held silent instead."""
        with self._lock:
            if pair is not None and pair in self._cut:
                self._held[pair].extend(sockets)
                return False
            if pair is not None:
                self._open[pair].extend(sockets)
            return True

    def forget(self, pair: Link | None, sockets: tuple[socket.socket, ...]) -> None:
        if pair is None:
            return
        with self._lock:
            live = self._open.get(pair, [])
            self._open[pair] = [s for s in live if s not in sockets]


class FrontDoor:
    """Accepts on a node's public port and forwards each connection to its hidden port.

    While the node is down (killed or stopped) the door is shut: connects to the public port
    are refused, as a dead process's port refuses them, which is the evidence pykraft's
    controller fences a dead broker on (:mod:`pykraft.runtime.broker_liveness`). An open door
    in front of a dead node would accept and then close, which no dead process does.
    """

    def __init__(self, node_id: int, host: str, public_port: int, hidden_port: int,
                 links: Links) -> None:
        self.node_id = node_id
        self._host = host
        self._upstream = (host, hidden_port)
        self._public_port = public_port
        self._links = links
        self._listener: socket.socket | None = None
        self._held: socket.socket | None = None
        self.open()

    def open(self) -> None:
        """Listen on the public port (again, after :meth:`shut`)."""
        if self._listener is not None:
            return
        if self._held is not None:
            close(self._held)
            self._held = None
        listener = socket.create_server((self._host, self._public_port), reuse_port=False)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,),
                         name=f"front-door-{self.node_id}", daemon=True).start()

    def shut(self) -> None:
        """Stop listening: connects are refused until :meth:`open`; connections already
        through stay (they end with the node). The port stays bound meanwhile (a socket
        that does not listen refuses), so no other socket takes it."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        close(listener)
        held = socket.socket()
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind((self._host, self._public_port))
        self._held = held

    def close(self) -> None:
        self.shut()
        if self._held is not None:
            close(self._held)
            self._held = None

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, (_, peer_port) = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client, peer_port), daemon=True).start()

    def _serve(self, client: socket.socket, peer_port: int) -> None:
        source = self._links.identify(peer_port, self._public_port)
        pair = None if source is None or source == self.node_id else link(source, self.node_id)
        if not self._links.admit(pair, (client,)):
            return  # held silent until the link heals
        try:
            server = socket.create_connection(self._upstream, timeout=5.0)
        except OSError:
            self._links.forget(pair, (client,))
            close(client)  # the node is down: refuse as it would
            return
        server.settimeout(None)
        if not self._links.admit(pair, (server,)):
            close(server)
            return
        both = (client, server)
        threading.Thread(target=_pump, args=(server, client), daemon=True).start()
        _pump(client, server)
        self._links.forget(pair, both)


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy until either side closes, then close both."""
    while True:
        try:
            data = source.recv(_CHUNK)
            if not data:
                break
            sink.sendall(data)
        except OSError:
            break
    close(source)
    close(sink)


def close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
