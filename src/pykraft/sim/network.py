"""An in-memory network: per-link random delay and loss, and partitions.

Random delays reorder messages on their own. A blocked link refuses connections; a lost
message breaks the connection, which the requester learns a little later (KRaft runs over
TCP, where loss shows up as a broken connection, not as silence). Requests to a crashed
node vanish silently, so the sender's request timeout is exercised too.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LinkProfile:
    min_delay_ms: int = 1
    max_delay_ms: int = 5
    drop_rate: float = 0.0


class Network:
    def __init__(self, rng: random.Random, profile: LinkProfile) -> None:
        self._rng = rng
        self._profile = profile
        self._links: dict[tuple[int, int], LinkProfile] = {}
        self._blocked: set[tuple[int, int]] = set()

    def set_link(self, source: int, destination: int, profile: LinkProfile) -> None:
        """Give one direction of one link its own delay and loss."""
        self._links[(source, destination)] = profile

    def is_blocked(self, source: int, destination: int) -> bool:
        return (source, destination) in self._blocked

    def delay_ms(self, source: int, destination: int) -> int | None:
        """Transit time of one message, or None if the network loses it."""
        profile = self._links.get((source, destination), self._profile)
        if profile.drop_rate and self._rng.random() < profile.drop_rate:
            return None
        return self._rng.randint(profile.min_delay_ms, profile.max_delay_ms)

    def isolate(self, node: int, others: Iterable[int]) -> None:
        for other in others:
            if other != node:
                self._blocked.update({(node, other), (other, node)})

    def partition(self, *groups: Iterable[int]) -> None:
        """Only nodes of the same group can talk."""
        sets = [set(group) for group in groups]
        for index, group in enumerate(sets):
            for other in sets[index + 1:]:
                for a in group:
                    for b in other:
                        self._blocked.update({(a, b), (b, a)})

    def allow_only(self, nodes: Iterable[int], edges: Iterable[tuple[int, int]]) -> None:
        """Keep exactly the given undirected edges between ``nodes``."""
        allowed = {frozenset(edge) for edge in edges}
        members = sorted(nodes)
        for a in members:
            for b in members:
                if a != b and frozenset((a, b)) not in allowed:
                    self._blocked.add((a, b))

    def heal(self) -> None:
        self._blocked.clear()


def lossy_network(rng: random.Random, nodes: Iterable[int]) -> Network:
    """Loss and delay drawn per run, plus one slow, lossy link direction between two nodes."""
    network = Network(rng, LinkProfile(1, rng.choice((3, 5, 10)),
                                       rng.choice((0.0, 0.0, 0.01, 0.03))))
    members = sorted(nodes)
    if len(members) > 1:
        a, b = rng.sample(members, 2)
        network.set_link(a, b, LinkProfile(5, 50, 0.1))
    return network
