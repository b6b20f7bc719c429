"""Deliberately broken cores: the simulator must catch each of them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pykraft.controller.broker_liveness import (
    LivenessWatch,
    Probe,
    ProbeOutcome,
    Report,
    Verdict,
)
from pykraft.raft.core import RaftClient
from pykraft.raft.leader import LeaderProgress
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.reconfig import ReconfigContext
from pykraft.raft.states import Prospective, Unattached
from pykraft.raft.voter_set import ReplicaKey
from pykraft.replica.leader import Brokers, IsrProposal, LeaderReplication


class _LeaderProgressWithoutMajority(LeaderProgress):
    """Commits whatever the leader itself has flushed, ignoring the followers."""

    def majority_end_offset(self) -> int | None:
        return self.voter_progress[self.local_id].end_offset


class HighWatermarkWithoutMajority(RaftClient):
    def new_leader_progress(self, epoch_start_offset: int) -> LeaderProgress:
        return _LeaderProgressWithoutMajority(
            self.local_key, self.epoch, self.voters, epoch_start_offset=epoch_start_offset,
            now_ms=0, config=self.config,
        )


class GrantsTwoVotesPerEpoch(RaftClient):
    """An unattached voter grants every up-to-date candidate, even after voting."""

    def can_grant_vote(self, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
        if isinstance(self.state, Unattached | Prospective):
            return up_to_date
        return super().can_grant_vote(candidate, up_to_date, pre_vote)


class SkipsTruncation(RaftClient):
    """A follower that keeps its divergent suffix when the leader reports divergence."""

    def truncate_diverging(self, diverging: OffsetAndEpoch) -> None:
        return None


class WithoutPreVote(RaftClient):
    """Campaigns with real votes straight away, as Kafka did before KIP-996."""

    def become_prospective(self) -> None:
        self.become_candidate()


class AllowsConcurrentVoterChanges(RaftClient):
    """Accepts a voter change while another one is pending or uncommitted."""

    def reconfig_context(self, progress: LeaderProgress) -> ReconfigContext:
        return replace(super().reconfig_context(progress), change_pending=False,
                       last_voters_offset=None)


class _ObserversCountTowardHighWatermark(LeaderProgress):
    def majority_end_offset(self) -> int | None:
        replicas = [*self.voter_progress.values(), *self.observer_progress.values()]
        offsets = sorted((p.end_offset for p in replicas if p.end_offset is not None),
                         reverse=True)
        index = len(self.voters) // 2
        return offsets[index] if index < len(offsets) else None


class CountsObserversTowardHighWatermark(RaftClient):
    """Lets observers' fetch offsets make up the majority behind the high watermark."""

    def new_leader_progress(self, epoch_start_offset: int) -> LeaderProgress:
        return _ObserversCountTowardHighWatermark(
            self.local_key, self.epoch, self.voters, epoch_start_offset=epoch_start_offset,
            now_ms=0, config=self.config,
        )


class HighWatermarkAtLeaderEnd(LeaderReplication):
    """Moves a partition's high watermark to the leader's log end, ignoring the followers."""

    def high_watermark(self, current: int, *, leader_end_offset: int, now_ms: int,
                       min_insync_replicas: int, brokers: Brokers) -> int:
        return max(current, leader_end_offset)


class ExpandsBehindHighWatermark(LeaderReplication):
    """Takes a fetching follower into the ISR before it reached the high watermark."""

    def propose_expand(self, replica_id: int, *, high_watermark: int, brokers: Brokers,
                       local_epoch: int) -> IsrProposal | None:
        return super().propose_expand(replica_id, high_watermark=0, brokers=brokers,
                                      local_epoch=local_epoch)


class TimeoutIsRefusal(LivenessWatch):
    """Takes a connect that timed out (a lossy or cut link) for a refused one."""

    def round_done(self, now_ms: float, probe: Probe,
                   outcomes: Sequence[ProbeOutcome]) -> Verdict:
        return super().round_done(now_ms, probe, [
            ProbeOutcome.REFUSED if outcome is ProbeOutcome.TIMED_OUT else outcome
            for outcome in outcomes])


class ReportsTheCurrentEpoch(LivenessWatch):
    """Reports refusals about the broker's incarnation at the time of the report, not the
    one it probed: a quick restart's new incarnation pays for the old one's death."""

    def round_done(self, now_ms: float, probe: Probe,
                   outcomes: Sequence[ProbeOutcome]) -> Verdict:
        verdict = super().round_done(now_ms, probe, outcomes)
        if isinstance(verdict, Report):
            current = self._lookup(probe.target.broker_id)
            return Report(current) if current is not None else verdict
        return verdict
