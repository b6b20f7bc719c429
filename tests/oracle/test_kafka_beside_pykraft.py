"""Real Apache Kafka and pykraft started by the same harness, side by side: a Kafka
cluster and a pykraft cluster of one controller and one broker each.

Both answer ApiVersions (sent and read with pykraft's own codec) on their broker and
controller listeners; the table of what each advertises is printed, and every version
pykraft advertises must be one Kafka advertises too. pykraft's own tools then create a topic
on the Kafka cluster, produce to it and consume from it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from oracle_cluster import (
    KAFKA,
    PYKRAFT,
    ClusterSpec,
    KafkaInstall,
    OracleCluster,
    api_name,
    call,
    running,
)
from oracle_kafka import skip_module_off_ci
from typer.testing import CliRunner, Result

from pykraft.protocol.api_versions import ranges_from_response
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import request_type

skip_module_off_ci()

API_VERSIONS_VERSION = 4
SOCKET_TIMEOUT_S = 20.0
Ranges = dict[int, tuple[int, int]]


@pytest.fixture(scope="module")
def clusters(kafka: KafkaInstall, tmp_path_factory: pytest.TempPathFactory,
             ) -> Iterator[dict[str, OracleCluster]]:
    """Kafka's cluster and pykraft's, each one controller and one broker."""
    specs = [ClusterSpec(controllers=(kind,), brokers=(kind,)) for kind in (KAFKA, PYKRAFT)]
    with running(tmp_path_factory.mktemp("oracle"), kafka, *specs) as (theirs, ours):
        yield {KAFKA: theirs, PYKRAFT: ours}


def advertised(address: str) -> Ranges:
    """ApiVersions v4 on a fresh connection: the (min, max) of every API key listed."""
    body = call(address, ApiKey.API_VERSIONS, API_VERSIONS_VERSION, request_type(
        ApiKey.API_VERSIONS, API_VERSIONS_VERSION)(
        client_software_name="pykraft-oracle", client_software_version="1"),
        timeout_s=SOCKET_TIMEOUT_S)
    assert body.error_code == 0
    return ranges_from_response(body)


def comparison_table(listener: str, kafka: Ranges, pykraft: Ranges) -> str:
    """One row per API key either side lists: Kafka's range, pykraft's, and a mark where
    pykraft advertises a version Kafka does not."""
    def cell(ranges: Ranges, key: int) -> str:
        return f"{ranges[key][0]}-{ranges[key][1]}" if key in ranges else "-"
    rows = [f"ApiVersions on the {listener} listeners ({len(kafka)} APIs in Kafka, "
            f"{len(pykraft)} in pykraft)", f"{'API':<36} {'Kafka':>7} {'pykraft':>8}"]
    for key in sorted(kafka.keys() | pykraft.keys()):
        mark = "  <- beyond Kafka" if key in beyond_kafka(kafka, pykraft) else ""
        rows.append(f"{api_name(key) + f' ({key})':<36} {cell(kafka, key):>7} "
                    f"{cell(pykraft, key):>8}{mark}")
    return "\n".join(rows)


def beyond_kafka(kafka: Ranges, pykraft: Ranges) -> dict[int, tuple[int, int]]:
    """pykraft's ranges that include a version Kafka does not advertise."""
    return {key: (low, high) for key, (low, high) in pykraft.items()
            if key not in kafka or low < kafka[key][0] or high > kafka[key][1]}


@pytest.mark.parametrize("listener", ["broker", "controller"])
def test_every_version_pykraft_advertises_kafka_advertises(
        clusters: dict[str, OracleCluster], listener: str) -> None:
    kafka, pykraft = (advertised(clusters[kind].with_role(listener)[0].listener(listener))
                      for kind in (KAFKA, PYKRAFT))
    print("\n" + comparison_table(listener, kafka, pykraft))
    assert ApiKey.API_VERSIONS in kafka
    assert beyond_kafka(kafka, pykraft) == {}


def pykraft_tool(cluster: OracleCluster, *args: str, stdin: str | None = None) -> Result:
    from pykraft.cli.main import app

    return CliRunner().invoke(app, [args[0], "--bootstrap-server", cluster.bootstrap_servers,
                                    *args[1:]], input=stdin)


def test_pykraft_tools_produce_and_consume_on_kafka(
        clusters: dict[str, OracleCluster]) -> None:
    kafka = clusters[KAFKA]
    created = pykraft_tool(kafka, "topics", "--create", "--topic", "lines", "--partitions",
                           "2", "--replication-factor", "1")
    assert created.exit_code == 0, created.output
    assert created.stdout == "Created topic lines.\n"
    lines = [f"k{i}:value {i}" for i in range(6)]
    produced = pykraft_tool(kafka, "console-producer", "--topic", "lines", "--property",
                            "parse.key=true", "--property", "key.separator=:",
                            stdin="".join(f"{line}\n" for line in lines))
    assert produced.exit_code == 0, produced.output
    consumed = pykraft_tool(kafka, "console-consumer", "--topic", "lines",
                            "--from-beginning", "--max-messages", str(len(lines)),
                            "--property", "print.key=true", "--timeout-ms", "30000")
    assert consumed.exit_code == 0, consumed.output
    assert sorted(consumed.stdout.splitlines()) == sorted(
        line.replace(":", "\t", 1) for line in lines)
    assert consumed.stderr.endswith(f"Processed a total of {len(lines)} messages\n")

