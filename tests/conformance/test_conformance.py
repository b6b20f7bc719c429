"""The table: every row of cases.py at every version its API advertises, on each listener
it names; test ids read ``<Api>-v<version>-<case>`` (``@controller`` when the row also runs
on the broker). Below it, Kafka's framing rules for what is not served."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from conformance.acl_cases import ACLS
from conformance.cases import BOTH, CASES, Case, Meaning, api_versions
from conformance.config_resource_cases import CONFIG_RESOURCES
from conformance.election_cases import ELECTIONS
from conformance.envelope_cases import ENVELOPE
from conformance.group_cases import GROUPS
from conformance.harness import BROKER, CONTROLLER, ClusterInfo, Run
from conformance.log_dir_cases import LOG_DIR_MOVES
from conformance.mutation_quota_cases import MUTATION_QUOTAS
from conformance.quota_cases import QUOTAS
from conformance.reassignment_cases import REASSIGNMENTS
from conformance.sasl_cases import SASL_CASES
from conformance.scram_cases import SCRAM
from conformance.token_cases import TOKENS
from conformance.topic_partitions_cases import DESCRIBE_TOPIC_PARTITIONS
from conformance.txn_cases import TXN
from conformance.wire import (
    CORRELATION_ID,
    ConnectionClosed,
    exchange,
    framed,
    kafka_python_call,
    raw_header,
)
from pykraft.protocol.apis import API_SPECS

Row = tuple[Case, str, int]
TABLE = [*CASES, *GROUPS, *SCRAM, *ACLS, *QUOTAS, *SASL_CASES, *ENVELOPE, *TXN, *ELECTIONS,
         *DESCRIBE_TOPIC_PARTITIONS, *REASSIGNMENTS, *TOKENS, *LOG_DIR_MOVES,
         *CONFIG_RESOURCES, *MUTATION_QUOTAS]


def rows() -> Iterator[Row]:
    for case in TABLE:
        for listener in case.listeners:
            for version in API_SPECS[case.api_key].versions:
                if case.since <= version < case.until:
                    yield case, listener, version


def row_id(row: Row) -> str:
    case, listener, version = row
    where = "@controller" if listener == CONTROLLER and case.listeners == BOTH else ""
    return f"{case.api}-v{version}-{case.name}{where}"


def param(row: Row) -> Any:
    deviation = row[0].deviation
    marks = [pytest.mark.xfail(strict=True, reason=deviation)] if deviation else []
    return pytest.param(row, id=row_id(row), marks=marks)


ROWS = list(rows())


@pytest.fixture(scope="session")
def latest_meaning(cluster: ClusterInfo) -> Callable[[Case, str], Meaning]:
    """A row's meaning at the API's latest version (asked once per row and listener)."""
    seen: dict[tuple[str, str, str], Meaning] = {}

    def meaning(case: Case, listener: str) -> Meaning:
        key = (case.api, case.name, listener)
        if key not in seen:
            run = Run(cluster, case.api, case.name, listener,
                      API_SPECS[case.api_key].max_version)
            seen[key] = case.meaning(case.send(run), run)
        return seen[key]
    return meaning


@pytest.mark.parametrize("row", [param(r) for r in ROWS])
def test_row(row: Row, cluster: ClusterInfo,
             latest_meaning: Callable[[Case, str], Meaning]) -> None:
    case, listener, version = row
    run = Run(cluster, case.api, case.name, listener, version)
    meaning = case.meaning(case.send(run), run)
    expected = case.expect(run) if case.expect is not None else latest_meaning(case, listener)
    assert meaning == expected
    assert case.check(meaning, run), f"{meaning!r} fails the row's check"


@pytest.mark.parametrize("listener", [BROKER, CONTROLLER])
def test_every_advertised_api_has_rows_at_its_advertised_versions(
        cluster: ClusterInfo, listener: str) -> None:
    run = Run(cluster, "ApiVersions", "advertised", listener, ApiVersionsRequest.max_version)
    advertised = {k.api_key: (k.min_version, k.max_version) for k in api_versions(run).api_keys}
    tested = {case.api_key: API_SPECS[case.api_key].advertised_range
              for case in TABLE if listener in case.listeners}
    assert advertised == tested


# -- what Kafka does not answer -------------------------------------------------------------

def refused(cluster: ClusterInfo, listener: str, api_key: int, version: int) -> bool:
    """True if the server closes the connection on a request it does not serve (Kafka:
    "Received request api key ... with version ... which is not enabled")."""
    try:
        exchange(cluster.address(listener), framed(raw_header(api_key, version) + bytes(8)))
    except (ConnectionClosed, ConnectionResetError):
        return True
    return False


@pytest.mark.parametrize("listener", [BROKER, CONTROLLER])
def test_api_versions_at_an_unsupported_version_answers_v0_with_the_ranges(
        cluster: ClusterInfo, listener: str) -> None:
    """KIP-511: the v0 body with UNSUPPORTED_VERSION and the listener's ranges, so the
    client can retry at a version both speak."""
    newest = ApiVersionsRequest.max_version
    request: Any = ApiVersionsRequest[newest](client_software_name="conformance",
                                              client_software_version="1")
    request.with_header(correlation_id=CORRELATION_ID, client_id="conformance")
    encoded = bytearray(request.encode(header=True))
    encoded[2:4] = (newest + 100).to_bytes(2, "big")  # a version nobody has
    payload = exchange(cluster.address(listener), framed(bytes(encoded)))
    body = ApiVersionsResponse.decode(payload, version=0, header=True)
    assert (body.header.correlation_id, body.error_code) == (CORRELATION_ID, 35)
    ranges = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert ranges[18] == API_SPECS[18].advertised_range


@pytest.mark.parametrize(("listener", "api_key", "version", "why"), [
    (BROKER, 3, API_SPECS[3].max_version + 1, "unsupported_version"),
    (CONTROLLER, 52, API_SPECS[52].max_version + 1, "unsupported_version"),
    (BROKER, 1000, 0, "unknown_api_key"),
    (CONTROLLER, 1000, 0, "unknown_api_key"),
    (BROKER, 52, 0, "controller_api_on_a_broker"),
    (CONTROLLER, 3, 0, "broker_api_on_a_controller"),
    # Kafka 4 advertises Produce v0-v2 for librdkafka (KAFKA-18659) but refuses them
    (BROKER, 0, 2, "produce_v2_removed_by_kip_896"),
], ids=str)
def test_what_is_not_served_closes_the_connection(
        cluster: ClusterInfo, listener: str, api_key: int, version: int, why: str) -> None:
    assert refused(cluster, listener, api_key, version), why


def test_a_served_request_keeps_kafka_python_framing(cluster: ClusterInfo) -> None:
    """The harness itself: a correlation id comes back as sent."""
    run = Run(cluster, "ApiVersions", "framing", BROKER, 0)
    answer = kafka_python_call(run.address, ApiVersionsRequest[0](), ApiVersionsResponse)
    assert answer.correlation_id == CORRELATION_ID
