"""The integer ranges the core accepts from peers and keeps for itself.

Epochs are int32 on the wire and in ``quorum-state``. A replica in epoch ``e`` may later
have to campaign in ``e + 1``, so the highest epoch it ever takes on, from a peer or by its
own bump, is one below the int32 maximum: a peer naming a larger one sends an invalid
request (Kafka's INVALID_REQUEST), and a replica already there stays put instead of bumping.
"""

from __future__ import annotations

INT32_MAX = 2**31 - 1
MAX_EPOCH = INT32_MAX - 1


def can_adopt_epoch(epoch: int) -> bool:
    """Whether a replica may move to ``epoch`` and still have a next epoch to campaign in."""
    return 0 <= epoch <= MAX_EPOCH
