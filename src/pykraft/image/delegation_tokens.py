"""Delegation tokens in the metadata log (KIP-48, KIP-900): token id -> the token's record.

pykraft serves none of the token APIs, but a Kafka controller in the quorum writes the
records (a DelegationTokenRecord creates or renews a token, a RemoveDelegationTokenRecord
expires it), and an image must carry them into its snapshots as Kafka's DelegationTokenImage
does: a Kafka node loading a snapshot a pykraft node wrote would otherwise lose every token.
The record holds no HMAC (each node derives it from ``delegation.token.secret.key``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from pykraft.records.metadata import DelegationTokenRecord, RemoveDelegationTokenRecord

MV_3_6_IV2 = 14  # metadata.version's isDelegationTokenSupported


@dataclass(frozen=True, slots=True)
class DelegationTokensImage:
    """Token id -> its latest DelegationTokenRecord (Kafka's DelegationTokenData)."""

    tokens: Mapping[str, DelegationTokenRecord] = field(default_factory=dict)

    def records(self, metadata_version: int) -> Iterator[tuple[object, int]]:
        """Kafka's DelegationTokenImage.write: nothing below 3.6-IV2, whose nodes cannot
        read them (Kafka's controller creates no token there)."""
        if metadata_version < MV_3_6_IV2:
            return
        for token_id in sorted(self.tokens):
            yield self.tokens[token_id], 0


class DelegationTokensDelta:
    """Token changes on top of an image; None removes one."""

    def __init__(self, image: DelegationTokensImage) -> None:
        self._image = image
        self._changes: dict[str, DelegationTokenRecord | None] = {}

    def replay(self, record: DelegationTokenRecord | RemoveDelegationTokenRecord) -> None:
        self._changes[record.token_id] = (
            record if isinstance(record, DelegationTokenRecord) else None)

    def apply(self) -> DelegationTokensImage:
        if not self._changes:
            return self._image
        tokens: dict[str, DelegationTokenRecord | None] = {**self._image.tokens,
                                                            **self._changes}
        return DelegationTokensImage({token_id: record for token_id, record in tokens.items()
                                      if record is not None})
