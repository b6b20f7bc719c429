"""What the group and transaction coordinators' runtimes share about their partition's log:
replaying it into a shard when leadership arrives, and naming a failed write's error.

Interface::

    end = await replay_log(hosted, still_current, on_batch, buffer_bytes=...)
    code = append_error(exc)   # the Produce error a failed coordinator append stands for
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from pykraft.broker.replica_manager import HostedPartition
from pykraft.errors import OffsetOutOfRangeError, StorageError
from pykraft.protocol.errors import ErrorCode
from pykraft.records.batch import RecordBatch, complete_batches, iter_batches
from pykraft.storage.partition_log import RecordBatchTooLargeError


def whole_batches(data: bytes) -> Iterable[RecordBatch]:
    """The complete batches of a read (its last one may be cut short)."""
    _, end = complete_batches(data)
    return iter_batches(data[:end])


async def replay_log(hosted: HostedPartition, still_current: Callable[[], bool],
                     on_batch: Callable[[RecordBatch], None], *, buffer_bytes: int) -> int:
    """Hand every batch from the log start to the log end as of now to ``on_batch``
    (control batches too: the group coordinator's transaction markers), reading
    ``buffer_bytes`` at a time and letting the loop run between reads; stops early once
    ``still_current`` says the partition was lost. Returns the end it replayed to."""
    offset, end = hosted.log_start_offset, hosted.log_end_offset
    while offset < end and still_current():
        try:
            data = hosted.log.read(offset, buffer_bytes, max_offset=end)
        except OffsetOutOfRangeError:  # retention moved the start: read from there
            offset = hosted.log_start_offset
            continue
        start = offset
        for batch in whole_batches(data):
            on_batch(batch)
            offset = batch.last_offset + 1
        if offset == start:  # nothing whole to read below the end
            break
        await asyncio.sleep(0)
    return end


def append_error(exc: Exception) -> ErrorCode:
    """The error Produce would answer for a coordinator append that raised ``exc``."""
    if isinstance(exc, RecordBatchTooLargeError):
        return ErrorCode.RECORD_LIST_TOO_LARGE
    if isinstance(exc, StorageError):
        return ErrorCode.KAFKA_STORAGE_ERROR
    return ErrorCode(getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR))
