"""A leader's header rewrite by copy writes what the in-place rewrite writes, CRC included."""

from __future__ import annotations

import pytest

from pykraft.records.batch import (
    ATTR_TIMESTAMP_TYPE,
    encode_batch,
    iter_batches,
    restamped_batch,
    rewrite_header,
)


@pytest.mark.parametrize(("attributes", "max_timestamp"), [
    (0, 1_000),  # offsets and epoch only: the client's CRC stays
    (ATTR_TIMESTAMP_TYPE, 1_000), (0, 5_000), (ATTR_TIMESTAMP_TYPE, 9_999)])
def test_restamped_batch_is_the_in_place_rewrite(attributes: int, max_timestamp: int) -> None:
    batch = encode_batch(0, [(b"k%d" % i, b"v" * i) for i in range(50)],
                         partition_leader_epoch=-1, timestamp=1_000)
    fields = {"base_offset": 123_456, "partition_leader_epoch": 7, "attributes": attributes,
              "max_timestamp": max_timestamp}
    in_place = bytearray(batch)
    rewrite_header(in_place, **fields)
    copied = restamped_batch(batch, **fields)
    assert copied == bytes(in_place) and type(copied) is bytes
    (read,) = iter_batches(copied)  # checks the CRC
    assert (read.base_offset, read.epoch, read.header.max_timestamp) == (
        123_456, 7, max_timestamp)
