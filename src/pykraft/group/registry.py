"""The groups of one shard, classic and consumer (KIP-848) alike, in one registry: a group
id names one group of one type, and each protocol's handlers look up and refuse the other's
groups the way Kafka does."""

from __future__ import annotations

from typing import Protocol


class Group(Protocol):
    """What every group type offers the shard."""

    @property
    def group_id(self) -> str: ...

    @property
    def group_type(self) -> str:
        """"classic" or "consumer", as ListGroups v5 reports it."""
        ...

    def is_empty(self) -> bool: ...

    def state_name(self) -> str:
        """The state ListGroups and DescribeGroups report ("Stable", "Empty", ...)."""
        ...

    def listed_protocol_type(self) -> str:
        """The protocol type ListGroups reports ("" when none)."""
        ...

    def validate_offset_commit(self, member_id: str, instance_id: str | None,
                               generation: int, api_version: int,
                               transactional: bool = False) -> int | None:
        """The error code refusing an OffsetCommit (a TxnOffsetCommit when
        ``transactional``) of this member at this generation (or member epoch), or None to
        accept it."""
        ...

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> int | None:
        """The error code refusing an OffsetFetch naming this member and epoch, or None."""
        ...

    def is_subscribed_to(self, topic: str) -> bool:
        """Whether a member consumes ``topic``: its offsets cannot be deleted (OffsetDelete)
        and do not expire."""
        ...


Groups = dict[str, Group]
