"""Producer ids for idempotent producers: blocks from the controller, InitProducerId answers.

Kafka's RPCProducerIdManager and the non-transactional half of its TransactionCoordinator's
``handleInitProducerId``. Interface, for the broker's request handlers:

* :class:`ProducerIdManager` ``(broker_id, broker_epoch, channel)``: ``broker_epoch`` is
  called for the epoch of each AllocateProducerIds request, ``channel`` is the broker's
  :class:`~pykraft.runtime.controller_channel.ControllerChannel` (anything with an async
  ``send(body)``). :meth:`ProducerIdManager.generate_producer_id` returns a fresh id, or
  None while the broker holds no block (InitProducerId then answers
  ``COORDINATOR_LOAD_IN_PROGRESS``, which clients retry); it never waits: the block
  request runs as a background task, bounded by the channel's request timeout.
* :func:`init_producer_id` ``(request, manager)``: the InitProducerId response to a
  request of any version (one class: a version's absent producer id and epoch, v0-2, read
  as their -1 defaults; the answer's v6 fields keep theirs).

The rules, in the pure :class:`ProducerIdBlocks` (time is passed in): ids come in blocks of
1000 from the active controller; when the id at 90 % of the current block is handed out,
the next block is requested; when the current block is used up the prefetched one takes
over, and without one the caller gets ``None`` and a request goes out. A refused or
malformed answer backs the next request off by 50 ms; a request that got no answer may be
sent again at once (Kafka's ``handleTimeout``).

Ids are unique across brokers, broker restarts and controller failover because the
controller answers AllocateProducerIds only once its ProducerIdsRecord (the start of the
following block) has committed: a block handed out is in the log before any broker sees it,
and a broker that restarts asks for a new block instead of reusing its old one.

An InitProducerId naming a transactional id goes to the transaction coordinator
(:mod:`pykraft.broker.txn_apis`) once its producer id and epoch are checked here
(:func:`producer_id_and_epoch_refusal`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.errors import NetworkError, UnsupportedVersionError
from pykraft.messages.kafka.allocate_producer_ids_request import AllocateProducerIdsRequest
from pykraft.messages.kafka.allocate_producer_ids_response import AllocateProducerIdsResponse
from pykraft.messages.kafka.init_producer_id_request import InitProducerIdRequest
from pykraft.messages.kafka.init_producer_id_response import InitProducerIdResponse
from pykraft.protocol.errors import ErrorCode, error_name
from pykraft.records.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID
from pykraft.runtime.controller_channel import ControllerSender
from pykraft.runtime.logfmt import event

log = logging.getLogger("pykraft.broker.producer_ids")

PREFETCH_THRESHOLD = 0.90  # Kafka's ProducerIdManager.PidPrefetchThreshold
ITERATION_LIMIT = 3
RETRY_BACKOFF_MS = 50
_NO_RETRY = -1


@dataclass(frozen=True, slots=True)
class ProducerIdsBlock:
    """``size`` ids from ``first`` (Kafka's ProducerIdsBlock, without its broker id)."""

    first: int
    size: int

    @property
    def last(self) -> int:
        return self.first + self.size - 1

    @property
    def prefetch_at(self) -> int:
        """Handing out this id asks for the next block."""
        return self.first + int(self.size * PREFETCH_THRESHOLD)


EMPTY_BLOCK = ProducerIdsBlock(-1, 0)


class ProducerIdBlocks:
    """The block state of one broker, sans I/O: :meth:`generate` hands out ids, and
    :meth:`take_request` says whether an AllocateProducerIds request is due; its outcome
    comes back through :meth:`block_received` or :meth:`request_failed`."""

    def __init__(self) -> None:
        self.current = EMPTY_BLOCK
        self._next_id = EMPTY_BLOCK.first
        self.next_block: ProducerIdsBlock | None = None
        self._in_flight = False
        """A request is out, or its block waits in :attr:`next_block`."""
        self._retry_at_ms = _NO_RETRY
        self._request_due = False

    def generate(self, now_ms: int) -> int | None:
        """The next id, or None while no block is held (a request is made due)."""
        for _ in range(ITERATION_LIMIT):
            if self._next_id <= self.current.last:
                producer_id = self._next_id
                self._next_id += 1
                if producer_id == self.current.prefetch_at:
                    self._maybe_request(now_ms)
                return producer_id
            if self.next_block is None:
                self._maybe_request(now_ms)
                return None
            self.current, self.next_block = self.next_block, None
            self._next_id = self.current.first
            self._in_flight = False
        return None

    def take_request(self) -> bool:
        """True once per request to send."""
        due, self._request_due = self._request_due, False
        return due

    def block_received(self, now_ms: int, error: int, start: int, length: int) -> str | None:
        """An AllocateProducerIds answer; the reason it was not taken, or None."""
        reason = self._refusal(error, start, length)
        if reason is None:
            self.next_block = ProducerIdsBlock(start, length)
        else:
            self._retry_at_ms = now_ms + RETRY_BACKOFF_MS
            self._in_flight = False
        return reason

    def request_failed(self) -> None:
        """No answer came (timeout, no controller reachable): ask again when next due."""
        self._in_flight = False

    def _refusal(self, error: int, start: int, length: int) -> str | None:
        if error != ErrorCode.NONE:
            return error_name(error)
        if start < self.current.last:
            return f"block {start}+{length} is not above the current block {self.current}"
        if start < 0 or length < 0 or start > 2**63 - 1 - length:
            return f"invalid block {start}+{length}"
        return None

    def _maybe_request(self, now_ms: int) -> None:
        if self._retry_at_ms != _NO_RETRY and now_ms < self._retry_at_ms:
            return
        if self.next_block is None and not self._in_flight:
            self._in_flight = True
            self._request_due = True
            self._retry_at_ms = _NO_RETRY


class ProducerIdManager:
    """Drives :class:`ProducerIdBlocks` on the event loop; see the module docstring."""

    def __init__(self, broker_id: int, broker_epoch: Callable[[], int],
                 channel: ControllerSender) -> None:
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._channel = channel
        self.blocks = ProducerIdBlocks()
        self._tasks: set[asyncio.Task[None]] = set()
        """The request in flight (the loop keeps only weak references to tasks)."""

    def generate_producer_id(self) -> int | None:
        producer_id = self.blocks.generate(self._now_ms())
        if self.blocks.take_request():
            task = asyncio.get_running_loop().create_task(self._request_block())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return producer_id

    async def _request_block(self) -> None:
        request = AllocateProducerIdsRequest(broker_id=self._broker_id,
                                             broker_epoch=self._broker_epoch())
        try:
            response = await self._channel.send(request)
        except (NetworkError, UnsupportedVersionError) as exc:
            event(log, "producer_id_block_unanswered", level=logging.WARNING, error=str(exc))
            self.blocks.request_failed()
            return
        except Exception:  # a background task: without this, no block would be asked again
            log.exception("producer_id_block_request_failed")
            self.blocks.request_failed()
            return
        assert isinstance(response, AllocateProducerIdsResponse)
        start, length = response.producer_id_start, response.producer_id_len
        refused = self.blocks.block_received(self._now_ms(), response.error_code, start, length)
        if refused is None:
            event(log, "producer_id_block", start=start, length=length)
        else:
            event(log, "producer_id_block_refused", level=logging.WARNING, reason=refused)

    @staticmethod
    def _now_ms() -> int:
        return int(asyncio.get_running_loop().time() * 1000)


def _answer(error: ErrorCode, producer_id: int = NO_PRODUCER_ID,
            epoch: int = NO_PRODUCER_EPOCH) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=error, producer_id=producer_id,
                                  producer_epoch=epoch)


def producer_id_and_epoch_refusal(body: InitProducerIdRequest
                                  ) -> InitProducerIdResponse | None:
    """INVALID_REQUEST for a producer id without an epoch or the reverse (KIP-360's fields
    go together), before any coordinator is asked, as Kafka."""
    if (body.producer_id == NO_PRODUCER_ID) != (body.producer_epoch == NO_PRODUCER_EPOCH):
        return _answer(ErrorCode.INVALID_REQUEST)
    return None


def init_producer_id(body: InitProducerIdRequest,
                     manager: ProducerIdManager) -> InitProducerIdResponse:
    """Kafka's answer to an idempotent producer's InitProducerId of any version (see the
    module docstring)."""
    assert body.transactional_id is None, "a transactional id goes to its coordinator"
    refusal = producer_id_and_epoch_refusal(body)
    if refusal is not None:
        return refusal
    # without a transactional id, a producer id and epoch sent (KIP-360) are ignored
    producer_id = manager.generate_producer_id()
    if producer_id is None:
        return _answer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    return _answer(ErrorCode.NONE, producer_id, 0)
