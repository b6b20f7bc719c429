"""Producer id blocks on a broker (Kafka's RPCProducerIdManager) and the InitProducerId
answers built on them, at every version the broker advertises."""

from __future__ import annotations

import asyncio
import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.broker.dispatch import BrokerDispatcher
from pykraft.broker.producer_ids import (
    RETRY_BACKOFF_MS,
    ProducerIdBlocks,
    ProducerIdManager,
    init_producer_id,
    producer_id_and_epoch_refusal,
)
from pykraft.errors import MalformedMessageError, NetworkError
from pykraft.messages.kafka.allocate_producer_ids_request import AllocateProducerIdsRequest
from pykraft.messages.kafka.allocate_producer_ids_response import AllocateProducerIdsResponse
from pykraft.messages.kafka.init_producer_id_request import InitProducerIdRequest
from pykraft.protocol.apis import API_SPECS, ApiKey
from pykraft.protocol.codec import decode_request, decode_response, encode_request
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.header import RequestHeader
from pykraft.security.session import anonymous

BLOCK = 1000
VERSIONS = list(API_SPECS[ApiKey.INIT_PRODUCER_ID].versions)


def holding(start: int) -> ProducerIdBlocks:
    """Blocks that asked for, and got, the block at ``start``."""
    blocks = ProducerIdBlocks()
    assert blocks.generate(0) is None and blocks.take_request()
    assert blocks.block_received(0, ErrorCode.NONE, start, BLOCK) is None
    return blocks


def test_first_id_waits_for_a_block_then_ids_run_through_it() -> None:
    blocks = ProducerIdBlocks()
    assert blocks.generate(0) is None
    assert blocks.take_request() and not blocks.take_request()  # one request, once
    assert blocks.generate(0) is None and not blocks.take_request()  # still in flight
    blocks.block_received(0, ErrorCode.NONE, 5000, BLOCK)
    assert [blocks.generate(0) for _ in range(3)] == [5000, 5001, 5002]


def test_the_next_block_is_asked_for_at_90_percent_and_takes_over_seamlessly() -> None:
    blocks = holding(0)
    handed = [blocks.generate(0) for _ in range(900)]
    assert handed == list(range(900)) and not blocks.take_request()
    assert blocks.generate(0) == 900 and blocks.take_request()  # the prefetch
    blocks.block_received(0, ErrorCode.NONE, 7000, BLOCK)
    rest = [blocks.generate(0) for _ in range(101)]
    assert rest == [*range(901, 1000), 7000, 7001]
    assert not blocks.take_request()


def test_an_exhausted_block_without_a_successor_answers_none_and_asks_again() -> None:
    blocks = holding(0)
    for _ in range(901):
        blocks.generate(0)
    assert blocks.take_request()
    blocks.request_failed()  # the prefetch got no answer
    for _ in range(99):
        blocks.generate(0)
    assert blocks.generate(0) is None and blocks.take_request()


@pytest.mark.parametrize("error", [ErrorCode.STALE_BROKER_EPOCH, ErrorCode.NOT_CONTROLLER,
                                   ErrorCode.UNKNOWN_SERVER_ERROR])
def test_a_refused_request_backs_off_before_the_next(error: ErrorCode) -> None:
    blocks = ProducerIdBlocks()
    blocks.generate(100)
    assert blocks.take_request()
    assert blocks.block_received(100, error, -1, 0) == error.name.upper()
    assert blocks.generate(100 + RETRY_BACKOFF_MS - 1) is None and not blocks.take_request()
    assert blocks.generate(100 + RETRY_BACKOFF_MS) is None and blocks.take_request()


@pytest.mark.parametrize(("start", "length"), [(-5, BLOCK), (10, -1), (2**63 - 10, BLOCK)])
def test_an_invalid_block_is_refused(start: int, length: int) -> None:
    blocks = ProducerIdBlocks()
    blocks.generate(0)
    blocks.take_request()
    assert blocks.block_received(0, ErrorCode.NONE, start, length) is not None
    assert blocks.next_block is None


def test_a_block_below_the_current_one_is_refused() -> None:
    blocks = holding(5000)
    for _ in range(901):
        blocks.generate(0)
    blocks.take_request()
    assert "not above" in str(blocks.block_received(0, ErrorCode.NONE, 0, BLOCK))
    assert blocks.next_block is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.just("generate"), st.just("answer"), st.just("fail"),
                          st.just("refuse")), max_size=3000))
def test_ids_handed_out_are_unique_and_only_from_blocks_received(steps: list[str]) -> None:
    """Against a controller that hands out consecutive blocks of 1000."""
    blocks, now, next_start = ProducerIdBlocks(), 0, 0
    pending, received, handed = False, [], []
    for step in steps:
        now += 7
        if step == "generate":
            producer_id = blocks.generate(now)
            if producer_id is not None:
                handed.append(producer_id)
            pending = pending or blocks.take_request()
        elif pending and step == "answer":
            pending = False
            blocks.block_received(now, ErrorCode.NONE, next_start, BLOCK)
            received.append(range(next_start, next_start + BLOCK))
            next_start += BLOCK
        elif pending:
            pending = False
            if step == "fail":
                blocks.request_failed()
            else:
                blocks.block_received(now, ErrorCode.STALE_BROKER_EPOCH, -1, 0)
    assert handed == sorted(set(handed))
    assert all(any(p in block for block in received) for p in handed)


# -- the driver --------------------------------------------------------------------------


class Controller:
    """A controller channel answering AllocateProducerIds with consecutive blocks."""

    def __init__(self, *, failure: Exception | None = None) -> None:
        self.failure = failure
        self.requests: list[AllocateProducerIdsRequest] = []
        self.next_start = 0

    async def send(self, body: Any) -> Any:
        self.requests.append(body)
        if self.failure is not None:
            raise self.failure
        start, self.next_start = self.next_start, self.next_start + BLOCK
        return AllocateProducerIdsResponse(error_code=ErrorCode.NONE, producer_id_start=start,
                                           producer_id_len=BLOCK)


async def settle(manager: ProducerIdManager) -> None:
    """Let the manager's block request finish."""
    for _ in range(10):
        await asyncio.sleep(0)


def test_the_manager_asks_the_controller_with_its_broker_id_and_epoch() -> None:
    controller = Controller()
    manager = ProducerIdManager(3, lambda: 42, controller)

    async def run() -> list[int | None]:
        first = manager.generate_producer_id()
        await settle(manager)
        return [first, manager.generate_producer_id(), manager.generate_producer_id()]

    assert asyncio.run(run()) == [None, 0, 1]
    (request,) = controller.requests
    assert (request.broker_id, request.broker_epoch) == (3, 42)


@pytest.mark.parametrize("failure", [NetworkError("no active controller is known yet"),
                                     MalformedMessageError("a truncated response")])
def test_a_request_without_an_answer_is_made_again_on_the_next_call(failure: Exception) -> None:
    controller = Controller(failure=failure)
    manager = ProducerIdManager(3, lambda: 42, controller)

    async def run() -> list[int | None]:
        answers = [manager.generate_producer_id()]
        await settle(manager)
        controller.failure = None
        answers.append(manager.generate_producer_id())
        await settle(manager)
        answers.append(manager.generate_producer_id())
        return answers

    assert asyncio.run(run()) == [None, None, 0]
    assert len(controller.requests) == 2


# -- InitProducerId ----------------------------------------------------------------------


def ready_manager(first: int = 0) -> ProducerIdManager:
    manager = ProducerIdManager(1, lambda: 1, SimpleNamespace())
    manager.blocks = holding(first)
    return manager


def init(version: int, manager: ProducerIdManager, *, transactional_id: str | None = None,
         producer_id: int = -1, epoch: int = -1) -> tuple[str, int, int]:
    request = decode_request(encode_request(  # as the version carries it
        RequestHeader(ApiKey.INIT_PRODUCER_ID, version, 9, "test"), InitProducerIdRequest(
            transactional_id=transactional_id, transaction_timeout_ms=60_000,
            producer_id=producer_id, producer_epoch=epoch))).body_as(InitProducerIdRequest)

    async def answer() -> Any:  # the manager runs on the event loop
        return init_producer_id(request, manager)

    response = asyncio.run(answer())
    return ErrorCode(response.error_code).name, response.producer_id, response.producer_epoch


@pytest.mark.parametrize("version", VERSIONS)
def test_an_idempotent_producer_gets_a_new_id_with_epoch_0(version: int) -> None:
    manager = ready_manager(3000)
    assert init(version, manager) == ("NONE", 3000, 0)
    assert init(version, manager) == ("NONE", 3001, 0)


@pytest.mark.parametrize("version", VERSIONS)
def test_without_a_block_the_answer_is_retriable(version: int) -> None:
    manager = ProducerIdManager(1, lambda: 1, Controller(failure=NetworkError("unreachable")))
    assert init(version, manager) == ("COORDINATOR_LOAD_IN_PROGRESS", -1, -1)
    assert ErrorCode.COORDINATOR_LOAD_IN_PROGRESS.retriable


def test_a_transactional_ids_producer_and_epoch_are_checked_before_its_coordinator() -> None:
    """KIP-360's fields go together for a transactional id too (then the coordinator
    answers, :mod:`pykraft.broker.txn_apis`)."""
    half = InitProducerIdRequest(transactional_id="txn", transaction_timeout_ms=60_000,
                                 producer_id=7, producer_epoch=-1)
    refusal = producer_id_and_epoch_refusal(half)
    assert refusal is not None and refusal.error_code == ErrorCode.INVALID_REQUEST
    assert producer_id_and_epoch_refusal(dataclasses.replace(half, producer_epoch=0)) is None


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 3])
def test_kip_360_fields(version: int) -> None:
    """A producer id without an epoch (or the reverse) is invalid; both, from an
    idempotent producer, get a new id (Kafka ignores them without a transactional id)."""
    manager = ready_manager(0)
    assert init(version, manager, producer_id=7, epoch=-1) == ("INVALID_REQUEST", -1, -1)
    assert init(version, manager, producer_id=-1, epoch=3) == ("INVALID_REQUEST", -1, -1)
    assert init(version, manager, producer_id=7, epoch=3) == ("NONE", 0, 0)


# -- through the broker's listener ---------------------------------------------------------


def test_the_broker_listener_answers_init_producer_id_with_its_registration_epoch() -> None:
    controller = Controller()
    image = SimpleNamespace(cluster=SimpleNamespace(brokers={1: SimpleNamespace(epoch=77)}))
    node = SimpleNamespace(settings=SimpleNamespace(
        node_id=1, controller=SimpleNamespace(properties={})))
    dispatcher = BrokerDispatcher(node, SimpleNamespace(image=image),  # type: ignore[arg-type]
                                  controller,  # type: ignore[arg-type]
                                  cluster_id="cid", listener_name="PLAINTEXT")
    request = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
    frame = encode_request(RequestHeader(ApiKey.INIT_PRODUCER_ID, 4, 9, "test"), request)

    async def run() -> list[tuple[int, int]]:
        answers = []
        for _ in range(2):
            wire = await dispatcher.handle(frame, anonymous("127.0.0.1:5000"))
            body = decode_response(ApiKey.INIT_PRODUCER_ID, 4, wire).body
            answers.append((body.error_code, body.producer_id))
            await settle(dispatcher.producer_ids)
        return answers

    assert asyncio.run(run()) == [(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1),
                                  (ErrorCode.NONE, 0)]
    assert [(r.broker_id, r.broker_epoch) for r in controller.requests] == [(1, 77)]
