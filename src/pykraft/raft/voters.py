"""The static voter set (kraft.version 0): every majority question is answered here.

Dynamic membership (KIP-853) will replace this one class, so nothing else counts voters.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class VoterSet:
    """Voter ids from ``controller.quorum.voters``."""

    ids: frozenset[int]

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.ids

    def __iter__(self) -> Iterator[int]:
        return iter(sorted(self.ids))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def majority(self) -> int:
        return len(self.ids) // 2 + 1

    def is_majority(self, members: Iterable[int]) -> bool:
        return len(self.ids.intersection(members)) >= self.majority

    def others(self, node_id: int) -> list[int]:
        return [voter for voter in self if voter != node_id]

    def is_only_voter(self, node_id: int) -> bool:
        return self.ids == {node_id}
