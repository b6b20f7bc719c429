"""The differential oracle: every conformance row, sent to a real Apache Kafka cluster and
to a pykraft cluster in the same state, gets the same decoded response from both.

Both clusters (one controller and one broker each, the broker with a SASL_PLAINTEXT
listener beside PLAINTEXT) are started by the oracle harness (``tests/oracle``) from the same
properties as the conformance suite's cluster, and set up alike (:func:`conformance.conftest.
set_up`: the shared topic). Each row then runs on both at once, in the same order as on the
other side, so a row that creates state (a fresh topic, a group, a user, an ACL) finds both
clusters as the previous rows left them. The two answers are compared field by field after
the normalisation of :mod:`conformance.differential`; what differs fails the row unless
:mod:`conformance.kafka_differences` lists it with the Kafka source that explains it.

Real clients' captured request frames (:mod:`conformance.frame_cases`) join the rows: each
is sent as captured to both brokers, after the rows, and judged the same way.

Each test records its outcome (``same``, ``fixed: ...``, ``excepted: ...``) as a junit
property, which ``scripts/differential_table.py`` prints as the API x version x listener
table.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

sys.path.insert(0, str(Path(__file__).parent.parent / "oracle"))
sys.path.insert(0, str(Path(__file__).parent.parent / "acceptance"))
from broker_harness import add_listener
from oracle_cluster import KAFKA, PYKRAFT, ClusterSpec, Kind, OracleCluster, api_name, running
from oracle_kafka import required, skip_module_off_ci

from conformance.cases import api_versions
from conformance.conftest import GROUP_PROPERTIES, SHARED_PARTITIONS, SHARED_TOPIC, set_up
from conformance.differential import Plain, differences, normalised, plain
from conformance.frame_cases import Frame, frames, send
from conformance.harness import BROKER, CONTROLLER, ClusterInfo, Run
from conformance.kafka_differences import excepted, fixed, known_defect
from conformance.test_conformance import ROWS, Row, param
from conformance.wire import ConnectionClosed, exchange, framed, raw_header
from pykraft.messages.kafka import API_MESSAGES
from pykraft.protocol.api_versions import listener_ranges
from pykraft.protocol.apis import Listener
from pykraft.tools.quorum_tool import parse_host_port

skip_module_off_ci()

SASL_LISTENER = "SASL_PLAINTEXT"
Pair = dict[Kind, ClusterInfo]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    """Kafka's cluster and pykraft's, started side by side and set up alike."""
    kafka = required()
    specs = [ClusterSpec(controllers=(kind,), brokers=(kind,), properties=GROUP_PROPERTIES)
             for kind in (KAFKA, PYKRAFT)]
    sasl_ports: dict[Path, int] = {}

    def sasl_listener(cluster: OracleCluster) -> None:
        sasl_ports[cluster.base] = add_listener(cluster.brokers[0].config, SASL_LISTENER)

    with running(tmp_path_factory.mktemp("differential"), kafka, *specs,
                 prepare=sasl_listener) as clusters:
        with ThreadPoolExecutor(len(clusters)) as both:
            infos = list(both.map(lambda c: set_up(info_of(c, sasl_ports[c.base])),
                                  clusters))
        yield dict(zip((KAFKA, PYKRAFT), infos, strict=True))


def info_of(cluster: OracleCluster, sasl_port: int) -> ClusterInfo:
    (controller,), (broker,) = cluster.controllers, cluster.brokers
    return ClusterInfo(
        cluster_id=cluster.cluster_id, controller_id=controller.node_id,
        controller=parse_host_port(controller.listener("controller")),
        broker_id=broker.node_id, broker=parse_host_port(broker.address),
        topic=SHARED_TOPIC, partitions=SHARED_PARTITIONS, epoch=-1,
        sasl=(broker.address.rpartition(":")[0], sasl_port))


def answers(pair: Pair, api: str, ask: Callable[[ClusterInfo], Any]) -> tuple[Plain, Plain]:
    """Kafka's response to ``ask`` (a request of ``api``), then pykraft's (asked at once),
    each normalised; what it raised instead, by type."""
    def answer(cluster: ClusterInfo) -> Plain:
        try:
            body = ask(cluster)
        except Exception as exc:  # a row that raises on one side only is a difference
            return {"raised": type(exc).__name__}
        return normalised(body, cluster, api)

    with ThreadPoolExecutor(2) as both:
        theirs, ours = both.map(answer, (pair[KAFKA], pair[PYKRAFT]))
    return theirs, ours


@pytest.mark.parametrize("row", [param(r) for r in ROWS])
def test_kafka_and_pykraft_answer_alike(
        row: Row, pair: Pair, record_property: Callable[[str, object], None]) -> None:
    case, listener, version = row
    theirs, ours = answers(pair, case.api, lambda cluster: case.send(
        Run(cluster, case.api, case.name, listener, version)))
    judge(case.api, case.name, theirs, ours, record_property)


FRAMES = frames()


@pytest.mark.parametrize("frame", FRAMES, ids=[
    f"{api_name(f.api_key)}-v{f.version}-{f.case}" for f in FRAMES])
def test_a_client_s_captured_frame_gets_kafka_s_answer(
        frame: Frame, pair: Pair, record_property: Callable[[str, object], None]) -> None:
    """A real client's request (:mod:`conformance.frame_cases`), sent as it captured it."""
    api = api_name(frame.api_key)
    theirs, ours = answers(pair, api, lambda cluster: send(frame, cluster))
    judge(api, frame.case, theirs, ours, record_property)


def judge(api: str, case: str, theirs: Plain, ours: Plain,
          record_property: Callable[[str, object], None]) -> None:
    """Fail on a difference neither excepted nor a known defect; xfail on known defects;
    record the row's outcome for the table."""
    left, defects, reasons = {}, set(), set()
    for path, values in differences(theirs, ours).items():
        exception = excepted(api, case, path, values)
        defect = known_defect(api, case, path, values)
        if exception is not None:
            reasons.add(str(exception))
        elif defect is not None:
            defects.add(str(defect))
        else:
            left[path] = values
    assert left == {}, f"Kafka's answer, then pykraft's, where they differ: {left}"
    outcome = outcome_of(api, case, reasons, defects)
    record_property("differential", outcome)
    if defects:
        pytest.xfail(outcome)


def outcome_of(api: str, case: str, reasons: set[str], defects: set[str]) -> str:
    """What the table shows for a row that did not fail."""
    if defects:
        return "defect: " + " | ".join(sorted(defects))
    if reasons:
        return "excepted: " + " | ".join(sorted(reasons))
    was_fixed = fixed(api, case)
    return "same" if was_fixed is None else f"fixed: {was_fixed.what}"


# -- what pykraft does not serve ---------------------------------------------------------------

CLOSED = "closed"
UNKNOWN_API_KEY = 1000


def reply(address: tuple[str, int], api_key: int, version: int) -> str:
    """The response frame (hex) to a header-only request, or :data:`CLOSED`."""
    try:
        return exchange(address, framed(raw_header(api_key, version) + bytes(8))).hex()
    except (ConnectionClosed, ConnectionResetError):
        return CLOSED


def ranges(cluster: ClusterInfo, listener: str) -> dict[int, tuple[int, int]]:
    run = Run(cluster, "ApiVersions", "ranges", listener, ApiVersionsRequest.max_version)
    return {k.api_key: (k.min_version, k.max_version) for k in api_versions(run).api_keys}


LISTENERS = (BROKER, CONTROLLER)
NOT_SERVED = [(listener, key) for listener in LISTENERS
              for key in sorted({*API_MESSAGES, UNKNOWN_API_KEY})
              if key not in listener_ranges(Listener(listener))]
SERVED = [(listener, key) for listener in LISTENERS
          for key in sorted(listener_ranges(Listener(listener)))]


@pytest.mark.parametrize(("listener", "api_key"), NOT_SERVED,
                         ids=[f"{api_name(k)}-{where}" for where, k in NOT_SERVED])
def test_an_api_pykraft_does_not_serve_gets_kafka_s_answer_to_one_it_does_not_serve(
        pair: Pair, listener: str, api_key: int,
        record_property: Callable[[str, object], None]) -> None:
    """pykraft's answer to this key (at Kafka's newest version of it, else 0) is Kafka's to
    a request it does not serve: this key beyond Kafka's newest version, or the key itself
    when Kafka does not serve it either. Kafka 4.4 closes the connection (its
    ``SocketServer`` cannot parse the request) and so must pykraft."""
    kafka_ranges = ranges(pair[KAFKA], listener)
    served_by_kafka = kafka_ranges.get(api_key)
    theirs = reply(pair[KAFKA].address(listener), api_key,
                   0 if served_by_kafka is None else served_by_kafka[1] + 1)
    ours = reply(pair[PYKRAFT].address(listener), api_key,
                 0 if served_by_kafka is None else served_by_kafka[1])
    judge(api_name(api_key), "not_served", theirs, ours, record_property)


@pytest.mark.parametrize(("listener", "api_key"), SERVED,
                         ids=[f"{api_name(k)}-{where}" for where, k in SERVED])
def test_a_version_beyond_both_gets_kafka_s_answer(
        pair: Pair, listener: str, api_key: int,
        record_property: Callable[[str, object], None]) -> None:
    """One version above the newest either serves: the same bytes back (ApiVersions: the
    KIP-511 v0 reply) or the connection closed by both."""
    newest = max(ranges(pair[KAFKA], listener).get(api_key, (0, 0))[1],
                 listener_ranges(Listener(listener))[api_key][1])
    theirs, ours = (reply(pair[kind].address(listener), api_key, newest + 1)
                    for kind in (KAFKA, PYKRAFT))
    judge(api_name(api_key), "unsupported_version", decoded(theirs), decoded(ours),
          record_property)


def decoded(answer: str) -> Plain:
    """A reply of :func:`reply`: closed, or the only answer Kafka gives, ApiVersions v0."""
    if answer == CLOSED:
        return CLOSED
    return plain(ApiVersionsResponse.decode(bytes.fromhex(answer), version=0, header=True))
