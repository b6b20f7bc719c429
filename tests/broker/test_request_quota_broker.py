"""A broker's request quota decision (pykraft.broker.client_quotas.BrokerQuotas): once per
request, on the handler time so far, the rest recorded without throttling for the next
requests; exempt APIs and requests outside a listener are not recorded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pykraft.broker.client_quotas import BrokerQuotas
from pykraft.config.server import ServerConfig
from pykraft.image.client_quotas import ClientQuotasImage
from pykraft.image.image import MetadataImage
from pykraft.protocol.apis import ApiKey
from pykraft.runtime import handler_time
from pykraft.security.session import ANONYMOUS, Session

SESSION = Session(ANONYMOUS, "127.0.0.1:1")
#: 1 % over 2 windows of 1 s: 10 ms of handler time a second, a burst of 10 ms
IMAGE = MetadataImage(client_quotas=ClientQuotasImage(
    {(("client-id", "busy"),): {"request_percentage": 1.0}}))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _no_request_left() -> Iterator[None]:
    """The tests set the request being served in this thread's context: cleared after."""
    token = handler_time.CURRENT.set(None)
    yield
    handler_time.CURRENT.reset(token)


def _quotas() -> BrokerQuotas:
    config = ServerConfig({"quota.window.num": "2", "quota.window.size.seconds": "1"})
    return BrokerQuotas(config, lambda: 1_000_000, lambda: IMAGE)


def _serving(clock: Clock) -> handler_time.HandlerTime:
    timed = handler_time.HandlerTime(SESSION, clock)
    handler_time.CURRENT.set(timed)
    return timed


def test_a_request_is_decided_once_and_its_rest_counts_for_the_next() -> None:
    quotas = _quotas()
    clock = Clock()
    timed = _serving(clock)
    timed.spent_s = 0.008  # 8 ms: within the burst
    assert quotas.throttle_request(ApiKey.METADATA, "busy") == 0
    timed.spent_s = 0.5  # the answer's encoding and write, after the decision
    assert quotas.throttle_request(ApiKey.METADATA, "busy") == 0  # decided already
    timed.finish()  # 492 ms more recorded
    _serving(clock).spent_s = 0.001
    # 501 ms over 1 s at 10 ms a second: (50.1 - 1) / 1 * 1 s, capped at one window
    assert quotas.throttle_request(ApiKey.METADATA, "busy") == 1000
    assert quotas.request.throttled == 1


def test_exempt_and_unquoted_requests_are_not_throttled() -> None:
    quotas = _quotas()
    _serving(Clock()).spent_s = 5.0
    assert quotas.throttle_request(ApiKey.WRITE_TXN_MARKERS, "busy") == 0  # a cluster action
    assert quotas.throttle_request(ApiKey.METADATA, "other") == 0  # no quota for it
    handler_time.CURRENT.set(None)  # not served by a listener (or quotas off when it came)
    assert quotas.throttle_request(ApiKey.METADATA, "busy") == 0
    assert quotas.request.throttled == 0
