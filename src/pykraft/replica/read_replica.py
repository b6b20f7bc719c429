"""Which replica a consumer should fetch a partition from (KIP-392, fetch from followers),
sans-I/O: the leader's side of Kafka's ``replica.selector.class`` plugin.

Interface::

    selector = replica_selector(properties)   # None: unset, consumers read the leader;
    #   RACK_AWARE for RackAwareReplicaSelector; ConfigError for any other class
    preferred = preferred_read_replica(
        selector, client_rack, leader_id=..., leader_end_offset=..., followers=...,
        isr=..., racks=..., fetch_offset=..., now_ms=...)  # a follower's id, or -1

Kafka loads the selector by reflection; pykraft cannot load Java classes, so it knows the
one selector Kafka ships (``org.apache.kafka.common.replica.RackAwareReplicaSelector``)
and refuses any other name at startup, as Kafka fails to start on a class it cannot load.

The candidates are ``ReplicaManager.findPreferredReadReplica``'s: the leader, and each
follower in the committed ISR whose log (as its last fetch told the leader) holds the
fetch offset, so a consumer is never sent where its offset is out of range. A replica whose
broker has no endpoint on the client's listener (fenced, unregistered) has no rack there.
The rack-aware choice (``RackAwareReplicaSelector.select``): without a client rack, or with
no candidate in it, or with the leader in it, the leader; otherwise the most caught-up
candidate of that rack (``ReplicaView.comparator``: highest log end offset, then the
shortest time since it was last caught up, then the highest broker id). The leader chosen
is no preference: -1, and the consumer keeps reading the leader.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from pykraft.errors import ConfigError
from pykraft.replica.leader import FollowerState

REPLICA_SELECTOR_CLASS = "replica.selector.class"
RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
NO_PREFERRED_REPLICA = -1  # FetchResponse.INVALID_PREFERRED_REPLICA_ID


class ReplicaSelector(enum.Enum):
    """The selectors pykraft has, by the Java class name Kafka configures them with."""

    RACK_AWARE = RACK_AWARE_REPLICA_SELECTOR


def replica_selector(properties: Mapping[str, str]) -> ReplicaSelector | None:
    """The configured selector, None when ``replica.selector.class`` is unset; a
    ConfigError for a class pykraft does not have (a blank value included: Kafka tries to
    load a class named "" and fails)."""
    if REPLICA_SELECTOR_CLASS not in properties:
        return None
    class_name = properties[REPLICA_SELECTOR_CLASS].strip()
    if class_name != RACK_AWARE_REPLICA_SELECTOR:
        raise ConfigError(
            f"Invalid value {class_name} for configuration {REPLICA_SELECTOR_CLASS}: pykraft "
            f"cannot load Java classes; only {RACK_AWARE_REPLICA_SELECTOR} is supported")
    return ReplicaSelector.RACK_AWARE


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """A candidate as the selector sees it (Kafka's ``ReplicaView``): its broker, that
    broker's rack on the client's listener (None: no rack, or no endpoint there), its log
    end offset and how long ago it was last caught up (0 for the leader)."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    caught_up_ms_ago: int

    def caught_up_rank(self) -> tuple[int, int, int]:
        """``ReplicaView.comparator``'s order: the greatest is the most caught up."""
        return self.log_end_offset, -self.caught_up_ms_ago, self.broker_id


def rack_aware_select(client_rack: str | None, leader: ReplicaView,
                      replicas: Iterable[ReplicaView]) -> ReplicaView:
    """``RackAwareReplicaSelector.select`` over ``replicas`` (the leader among them)."""
    if not client_rack:
        return leader
    same_rack = [replica for replica in replicas if replica.rack == client_rack]
    if not same_rack or leader in same_rack:
        return leader
    return max(same_rack, key=ReplicaView.caught_up_rank)


def preferred_read_replica(selector: ReplicaSelector | None, client_rack: str | None, *,
                           leader_id: int, leader_end_offset: int,
                           followers: Mapping[int, FollowerState], isr: Collection[int],
                           racks: Mapping[int, str | None], fetch_offset: int,
                           now_ms: int) -> int:
    """The follower a consumer fetching ``fetch_offset`` should read from, or -1 (no
    selector, or the leader chosen). ``racks``: the rack of each broker with an endpoint
    on the client's listener."""
    if selector is None:
        return NO_PREFERRED_REPLICA
    leader = ReplicaView(leader_id, racks.get(leader_id), leader_end_offset, 0)
    candidates = [leader, *(
        ReplicaView(broker_id, racks.get(broker_id), state.log_end_offset,
                    now_ms - state.last_caught_up_time_ms)
        for broker_id, state in followers.items()
        if broker_id in isr
        and state.log_start_offset <= fetch_offset <= state.log_end_offset)]
    chosen = rack_aware_select(client_rack, leader, candidates)
    return NO_PREFERRED_REPLICA if chosen is leader else chosen.broker_id
