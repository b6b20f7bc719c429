"""``pykraft topics`` without a cluster: TopicCommand's argument rules and messages, its
parsers, the describe text and its filters, the admin client's settings, and a refused
connection reported at once."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.config.definitions import ConfigSource
from pykraft.errors import ConfigError, UsageError
from pykraft.ids import ZERO_UUID, uuid_to_str
from pykraft.tools.admin_client import (
    AdminError,
    ConfigEntry,
    PartitionMetadata,
    admin_settings,
    parse_bootstrap_servers,
)
from pykraft.tools.topics_tool import (
    Description,
    TopicDescription,
    TopicOptions,
    check_options,
    describe_json,
    describe_lines,
    parse_configs,
    parse_replica_assignment,
    topic_filter,
    topic_line,
)

B = "127.0.0.1:9092"


def _options(action: str = "describe", **fields: object) -> TopicOptions:
    return TopicOptions(action=action, bootstrap_server=B, **fields)  # type: ignore[arg-type]


# -- argument rules -------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "message"), [
    (TopicOptions(action=None, actions=2, bootstrap_server=B),
     "Command must include exactly one action: --list, --describe, --create, --alter or "
     "--delete"),
    (TopicOptions(action="list"), "--bootstrap-server must be specified"),
    (_options("describe", if_exists=True),
     "--topic or --topic-id is required to describe a topic"),
    (_options("create"), 'Missing required argument "[topic]"'),
    (_options("delete"), 'Missing required argument "[topic]"'),
    (_options("alter", topic="t"), 'Missing required argument "[partitions]"'),
    (_options("alter", topic="t", partitions=2, configs=("a=b",)),
     'Option combination "[[bootstrap-server], [config]]" can\'t be used with option '
     '"[alter]" (To alter topic configurations, the kafka-configs tool can be used.)'),
    (_options("describe", partitions=3), 'Option "[partitions]" can\'t be used with option '
     '"[describe]"'),
    (_options("list", configs=("a=b",)), 'Option "[config]" can\'t be used with option '
     '"[list]"'),
    (_options("alter", topic="t", partitions=2, replication_factor=2),
     'Option "[replication-factor]" can\'t be used with option "[alter]"'),
    (_options("delete", topic="t", replica_assignment="1"),
     'Option "[replica-assignment]" can\'t be used with option "[delete]"'),
    (_options("create", topic="t", replica_assignment="1", replication_factor=1),
     'Option "[replica-assignment]" can\'t be used with option "[replication-factor]"'),
    (_options("list", reports=frozenset({"under-replicated-partitions"})),
     'Option "[under-replicated-partitions]" can\'t be used with option "[list]"'),
    (_options("describe", reports=frozenset({"at-min-isr-partitions"}),
              topics_with_overrides=True),
     'Option "[at-min-isr-partitions]" can\'t be used with option "[topics-with-overrides]"'),
    (_options("list", topics_with_overrides=True),
     'Option "[topics-with-overrides]" can\'t be used with option "[list]"'),
    (_options("create", topic="t", if_exists=True),
     'Option "[if-exists]" can\'t be used with option "[create]"'),
    (_options("delete", topic="t", if_not_exists=True),
     'Option "[if-not-exists]" can\'t be used with option "[delete]"'),
    (_options("delete", topic="t", exclude_internal=True),
     'Option "[exclude-internal]" can\'t be used with option "[delete]"'),
])
def test_kafkas_argument_rules(options: TopicOptions, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        check_options(options)
    assert str(caught.value) == message


@pytest.mark.parametrize("options", [
    _options("list"), _options("list", topic="a.*", exclude_internal=True),
    _options("describe", topic="t", if_exists=True,
             reports=frozenset({"under-replicated-partitions", "unavailable-partitions"})),
    _options("describe", topics_with_overrides=True),
    _options("create", topic="t", partitions=3, replication_factor=1, configs=("a=b",),
             if_not_exists=True),
    _options("create", topic="t", replica_assignment="1:2"),
    _options("alter", topic="t", partitions=4, replica_assignment="1,2,3,4", if_exists=True),
    _options("delete", topic="t", if_exists=True),
])
def test_valid_command_lines_pass(options: TopicOptions) -> None:
    check_options(options)


def test_the_cli_reports_usage_errors_on_stderr_before_connecting() -> None:
    result = CliRunner().invoke(app, ["topics", "--bootstrap-server", B, "--create",
                                      "--topic", "t", "--partitions", "1",
                                      "--replica-assignment", "1"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == ('Option "[replica-assignment]" can\'t be used with option '
                             '"[partitions]"\n')


@pytest.mark.parametrize(("args", "message"), [
    (["--create", "--topic", "t", "--json"], "--json applies to --list and --describe only"),
    (["--list", "--table"], "--table applies to --describe only"),
])
def test_json_and_table_apply_to_the_reading_actions(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["topics", "--bootstrap-server", B, *args])
    assert result.exit_code == 1
    assert result.stderr == message + "\n"


# -- parsers --------------------------------------------------------------------------------

def test_replica_assignment() -> None:
    assert parse_replica_assignment("1:2, 2 :3,3:1") == {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    with pytest.raises(UsageError, match=r"^Partition replica lists may not contain "
                                         r"duplicate entries: 2$"):
        parse_replica_assignment("1:2,2:2")
    with pytest.raises(UsageError, match=r"^Partition 1 has different replication factor: "
                                         r"\[2, 3, 1\]$"):
        parse_replica_assignment("1:2,2:3:1")
    with pytest.raises(UsageError, match=r'^For input string: "x"$'):
        parse_replica_assignment("1,x")


def test_configs() -> None:
    assert parse_configs(["retention.ms = 1000", "cleanup.policy=compact"]) == {
        "retention.ms": "1000", "cleanup.policy": "compact"}
    with pytest.raises(UsageError, match=r"must be in the format"):
        parse_configs(["retention.ms"])
    with pytest.raises(UsageError, match=r"must be in the format"):
        parse_configs(["a=b=c"])
    with pytest.raises(AdminError, match=r"^Unknown topic config name: retention.mss$"):
        parse_configs(["retention.mss=1"])


def test_the_topic_option_is_a_whole_name_regex_with_commas_for_alternatives() -> None:
    names = ["orders", "orders-eu", "payments", "__consumer_offsets"]
    assert [n for n in names if topic_filter("orders", False)(n)] == ["orders"]
    assert [n for n in names if topic_filter("orders.*", False)(n)] == ["orders", "orders-eu"]
    assert [n for n in names if topic_filter("'orders, payments'", False)(n)] == [
        "orders", "payments"]
    assert [n for n in names if topic_filter(None, True)(n)] == names[:3]
    assert topic_filter("__.*", False)("__consumer_offsets")
    assert not topic_filter("__.*", True)("__consumer_offsets")
    with pytest.raises(AdminError, match=r"^\(\[ is an invalid regex\.$"):
        topic_filter("([", False)


# -- describe output ------------------------------------------------------------------------

TOPIC_ID = uuid.UUID("a8c3f2b4-1d2e-4f50-9a6b-7c8d9e0f1a2b")


def _partition(index: int, leader: int | None, replicas: tuple[int, ...],
               isr: tuple[int, ...]) -> PartitionMetadata:
    return PartitionMetadata(index, leader, 0, replicas, isr, ())


def _description() -> Description:
    configs = (ConfigEntry("cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG),
               ConfigEntry("min.insync.replicas", "2", ConfigSource.TOPIC_CONFIG),
               ConfigEntry("retention.ms", "1000", ConfigSource.TOPIC_CONFIG))
    return Description(topics=(
        TopicDescription("orders", TOPIC_ID, (
            _partition(0, 1, (1, 2, 3), (1, 2, 3)),
            _partition(1, 2, (2, 3, 1), (2, 3)),
            _partition(2, None, (3, 1, 2), ()),
            _partition(3, 3, (3, 1, 2), (3,)),
        ), configs),
        TopicDescription("plain", ZERO_UUID, (_partition(0, 1, (1,), (1,)),), (
            ConfigEntry("min.insync.replicas", "1", ConfigSource.DEFAULT_CONFIG),)),
    ), live_brokers=frozenset({1, 2}))


def test_kafkas_describe_lines() -> None:
    assert describe_lines(_description(), _options()) == [
        f"Topic: orders\tTopicId: {uuid_to_str(TOPIC_ID)}\tPartitionCount: 4\t"
        "ReplicationFactor: 3\tConfigs: min.insync.replicas=2,retention.ms=1000",
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2,3\tElr: N/A\t"
        "LastKnownElr: N/A",
        "\tTopic: orders\tPartition: 1\tLeader: 2\tReplicas: 2,3,1\tIsr: 2,3\tElr: N/A\t"
        "LastKnownElr: N/A",
        "\tTopic: orders\tPartition: 2\tLeader: none\tReplicas: 3,1,2\tIsr: \tElr: N/A\t"
        "LastKnownElr: N/A",
        "\tTopic: orders\tPartition: 3\tLeader: 3\tReplicas: 3,1,2\tIsr: 3\tElr: N/A\t"
        "LastKnownElr: N/A",
        "Topic: plain\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: ",
        "\tTopic: plain\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: N/A\t"
        "LastKnownElr: N/A",
    ]


def test_configs_print_in_kafkas_hash_map_order_whatever_the_brokers_order() -> None:
    """TopicCommand prints a topic's overrides as its admin client's ``Config`` (a Java
    HashMap) iterates them: Kafka 4.4's tool prints ``min.insync.replicas=1,cleanup.policy=
    compact`` against Kafka and pykraft alike, whose brokers answer in other orders."""
    names = [f"key.{i}" for i in range(36)]  # a topic's DescribeConfigs: 37 entries
    defaults = [ConfigEntry(name, "1", ConfigSource.DEFAULT_CONFIG) for name in names]
    overrides = [
        ConfigEntry("cleanup.policy", "compact", ConfigSource.TOPIC_CONFIG),
        ConfigEntry("min.insync.replicas", "1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)]
    for configs in ((*overrides, *defaults), (*defaults, *reversed(overrides))):
        topic = TopicDescription("t", ZERO_UUID, (_partition(0, 1, (1,), (1,)),), configs)
        assert topic_line(topic).endswith("Configs: min.insync.replicas=1,cleanup.policy=compact")


@pytest.mark.parametrize(("reports", "expected"), [
    ({"under-replicated-partitions"}, [("orders", 1), ("orders", 2), ("orders", 3)]),
    ({"unavailable-partitions"}, [("orders", 2), ("orders", 3)]),  # none; 3 is not live
    ({"under-min-isr-partitions"}, [("orders", 2), ("orders", 3)]),
    ({"at-min-isr-partitions"}, [("orders", 1), ("plain", 0)]),
    ({"under-replicated-partitions", "at-min-isr-partitions"},
     [("orders", 1), ("orders", 2), ("orders", 3), ("plain", 0)]),
])
def test_report_options_print_only_matching_partitions(
    reports: set[str], expected: list[tuple[str, int]],
) -> None:
    lines = describe_lines(_description(), _options(reports=frozenset(reports)))
    assert [(line.split("\t")[1][len("Topic: "):], int(line.split("\t")[2][len("Partition: "):]))
            for line in lines] == expected


def test_topics_with_overrides_prints_topic_lines_of_overridden_topics_only() -> None:
    lines = describe_lines(_description(), _options(topics_with_overrides=True))
    assert [line.split("\t")[0] for line in lines] == ["Topic: orders"]


def test_json_holds_the_same_selection() -> None:
    documents = describe_json(_description(),
                              _options(reports=frozenset({"unavailable-partitions"})))
    assert [d["topic"] for d in documents] == ["orders"]
    assert documents[0]["topicId"] == uuid_to_str(TOPIC_ID)
    assert documents[0]["configs"] == {"min.insync.replicas": "2", "retention.ms": "1000"}
    assert [p["partition"] for p in documents[0]["partitions"]] == [2, 3]
    assert documents[0]["partitions"][0] == {"partition": 2, "leader": None,
                                             "replicas": [3, 1, 2], "isr": [], "elr": None,
                                             "lastKnownElr": None}


# -- admin client settings ------------------------------------------------------------------

def test_bootstrap_servers() -> None:
    assert parse_bootstrap_servers("a:1, b:2,[::1]:3") == (("a", 1), ("b", 2), ("::1", 3))
    with pytest.raises(ConfigError, match=r"^Invalid url in bootstrap.servers: a$"):
        parse_bootstrap_servers("a")
    with pytest.raises(ConfigError, match=r"^No resolvable bootstrap urls given"):
        parse_bootstrap_servers(" , ")


def test_command_config(tmp_path: Path) -> None:
    path = tmp_path / "admin.properties"
    path.write_text("client.id=ops\nrequest.timeout.ms=1500\ndefault.api.timeout.ms=4000\n"
                    "security.protocol=PLAINTEXT\n")
    settings = admin_settings(B, path)
    assert (settings.client_id, settings.request_timeout_s, settings.api_timeout_s) == (
        "ops", 1.5, 4.0)
    path.write_text("security.protocol=KERBEROS\n")
    with pytest.raises(ConfigError, match=r"security.protocol=KERBEROS is not supported"):
        admin_settings(B, path)
    path.write_text("security.protocol=SASL_PLAINTEXT\n")
    with pytest.raises(ConfigError, match=r"sasl\.jaas\.config is not set"):
        admin_settings(B, path)
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                    'required username="alice" password="alice-secret";\n')
    sasl = admin_settings(B, path).sasl
    assert sasl is not None and (sasl.mechanism, sasl.username) == ("SCRAM-SHA-512", "alice")
    path.write_text("request.timeout.ms=soon\n")
    with pytest.raises(ConfigError, match=r"^Invalid value soon for configuration "
                                          r"request.timeout.ms: Not a number of type INT$"):
        admin_settings(B, path)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound but not listening: connections are refused while the test runs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.mark.timeout(10)
@pytest.mark.parametrize("args", [["--list"], ["--describe"], ["--create", "--topic", "t"],
                                  ["--delete", "--topic", "t"],
                                  ["--alter", "--topic", "t", "--partitions", "2"]])
def test_a_refused_connection_fails_at_once(args: list[str], closed_port: int) -> None:
    result = CliRunner().invoke(app, ["topics", "--bootstrap-server",
                                      f"127.0.0.1:{closed_port}", *args])
    assert result.exit_code == 1
    assert result.stdout == ("Error while executing topic command : Connection to "
                             f"127.0.0.1:{closed_port} refused\n")
