"""``pykraft configs`` without a cluster: Kafka's ConfigCommand argument rules and messages,
the ``--add-config`` syntax, SCRAM credentials salted client-side, and the output lines."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.messages.kafka import alter_client_quotas_response as aq
from pykraft.messages.kafka import describe_client_quotas_response as dq
from pykraft.messages.kafka import describe_configs_response as dc
from pykraft.messages.kafka import describe_user_scram_credentials_response as ds
from pykraft.messages.kafka.alter_client_quotas_request import AlterClientQuotasRequest
from pykraft.messages.kafka.alter_client_quotas_response import AlterClientQuotasResponse
from pykraft.messages.kafka.alter_user_scram_credentials_response import (
    AlterUserScramCredentialsResponse,
    AlterUserScramCredentialsResult,
)
from pykraft.messages.kafka.describe_client_quotas_request import DescribeClientQuotasRequest
from pykraft.messages.kafka.describe_client_quotas_response import (
    DescribeClientQuotasResponse,
)
from pykraft.messages.kafka.describe_user_scram_credentials_request import (
    DescribeUserScramCredentialsRequest,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.tools import configs_tool as tool
from pykraft.tools.admin_client import AdminError
from pykraft.tools.configs_args import (
    ConfigsArgs,
    ConfigsArgumentError,
    Entity,
    check_args,
    parse_add_config,
    parse_configs_to_add,
    parse_configs_to_delete,
)

SERVER = "127.0.0.1:9092"
NO_QUOTAS = DescribeClientQuotasResponse(error_code=0, error_message="", entries=())


# -- --add-config and --delete-config ------------------------------------------------------

@pytest.mark.parametrize(("text", "parsed"), [
    ("k1=v1", {"k1": "v1"}),
    ("k1=v1,k2=[v2,v3],k3=v3", {"k1": "v1", "k2": "v2,v3", "k3": "v3"}),
    (" k1 = v1 , k2=", {"k1": "v1", "k2": ""}),  # an empty value is kept
    ("SCRAM-SHA-512=[password=a-secret],SCRAM-SHA-256=[iterations=8192,password=x]",
     {"SCRAM-SHA-512": "password=a-secret", "SCRAM-SHA-256": "iterations=8192,password=x"}),
    ("k=[a=b,c]", {"k": "a=b,c"}),  # '=' inside brackets stays in the value
    ("k=v,k=w", {"k": "w"}),  # the later value wins, as in Java's Properties
])
def test_add_config_syntax(text: str, parsed: dict[str, str]) -> None:
    assert parse_add_config(text) == parsed


@pytest.mark.parametrize("text", ["k1", "k1=v1,k2", "k1=v1=v2", "", "=a=b"])
def test_add_config_refuses_what_is_no_pair(text: str) -> None:
    with pytest.raises(ConfigsArgumentError, match='all configs to be added must be in the '
                       'format "key=val" or  "key=\\[val1,val2\\]"'):
        parse_add_config(text)


def test_add_config_file_and_key_characters(tmp_path: Path) -> None:
    path = tmp_path / "add.properties"
    path.write_text("retention.ms=1000\ncleanup.policy=compact,delete\n")
    assert parse_configs_to_add(None, path) == {"retention.ms": "1000",
                                                "cleanup.policy": "compact,delete"}
    with pytest.raises(ConfigsArgumentError,
                       match="Invalid character found for config key: bad key"):
        parse_configs_to_add("bad key=1", None)


def test_delete_config_is_comma_separated_and_repeatable() -> None:
    assert parse_configs_to_delete(["a, b", "c"]) == ("a", "b", "c")


# -- argument rules ------------------------------------------------------------------------

def args(**fields: Any) -> ConfigsArgs:
    return ConfigsArgs(**{"bootstrap_server": SERVER, **fields})


@pytest.mark.parametrize(("given", "message"), [
    (args(entity_types=("topics",)), "Command must include exactly one action"),
    (args(describe=True, alter=True, topic="t"), "Command must include exactly one action"),
    (args(describe=True, topic="t", add_config="a=b"),
     'Option "[describe]" can\'t be used with option "[add-config]"'),
    (args(describe=True, entity_types=("topics", "topics")),
     "Duplicate entity type(s) specified: topics"),
    (ConfigsArgs(describe=True, topic="t"),
     "Either --bootstrap-server or --bootstrap-controller must be specified."),
    (args(describe=True, entity_types=("tables",)),
     "Invalid entity type tables, the entity type must be one of broker-loggers, topics, "
     "clients, users, brokers, ips, client-metrics, groups with a --bootstrap-server or "
     "--bootstrap-controller argument"),
    (args(describe=True), "At least one entity type must be specified"),
    (args(describe=True, entity_types=("topics", "brokers")),
     "Only 'users' and 'clients' entity types may be specified together"),
    (args(describe=True, entity_types=("topics",), topic="t"),
     "Duplicate entity type(s) specified: topics"),  # Kafka counts the shorthand's type too
    (args(describe=True, entity_names=("x",), topic="t"),
     "--entity-{type,name,default} should not be used in conjunction with specific entity "
     "flags"),
    (args(describe=True, bootstrap_controller=SERVER, topic="t"),
     "Only one of --bootstrap-server or --bootstrap-controller can be specified"),
    (args(describe=True, broker="one"),
     "The entity name for brokers must be a valid integer broker id, but it is: one"),
    (args(describe=True, entity_types=("topics",), entity_default=True),
     "--entity-default must not be specified with --describe of topics"),
    (args(alter=True, entity_types=("topics",), add_config="a=b"),
     "An entity name must be specified with --alter of topics"),
    (args(alter=True, entity_types=("brokers",), add_config="a=b"),
     "An entity-name or default entity must be specified with --alter of users, clients, "
     "brokers or ips"),
    (args(alter=True, topic="t", add_config="a=b", add_config_file=Path("x")),
     "Only one of --add-config or --add-config-file must be specified"),
    (args(alter=True, topic="t"),
     "At least one of --add-config, --add-config-file, or --delete-config must be specified "
     "with --alter"),
    (args(alter=True, entity_types=("users", "clients"), entity_names=("alice",),
          add_config="a=b"), "An entity name must be specified for every entity type"),
    (args(describe=True, ip="300.1.1.1"), "The entity name for ips must be a valid IP or "
     "resolvable host, but it is: 300.1.1.1"),
    (args(describe=True, entity_types=("users",), entity_names=("a", "b")),
     "More entity names specified than entity types"),
    (args(describe=True, broker_logger="1"), "Entity type broker-loggers is not supported"),
    (args(describe=True, entity_types=("groups",)), "Entity type groups is not supported"),
])
def test_kafkas_argument_rules(given: ConfigsArgs, message: str) -> None:
    with pytest.raises(ConfigsArgumentError) as raised:
        check_args(given)
    assert str(raised.value).startswith(message)


def test_shorthands_and_generic_options_name_the_same_entity() -> None:
    assert check_args(args(describe=True, topic="t")).entity == Entity("topics", "t")
    assert check_args(args(describe=True, entity_types=("topics",), entity_names=("t",))
                      ).entity == Entity("topics", "t")
    assert check_args(args(describe=True, broker_defaults=True)).entity == Entity("brokers", "")
    assert check_args(args(describe=True, entity_types=("brokers",), entity_default=True)
                      ).entity == Entity("brokers", "")
    assert check_args(args(describe=True, entity_types=("users",))).entity == Entity(
        "users", None)
    command = check_args(args(alter=True, user="alice", add_config="SCRAM-SHA-256=[password=p]",
                              delete_config=("SCRAM-SHA-512",)))
    assert (command.entity, command.to_add, command.to_delete) == (
        Entity("users", "alice"), {"SCRAM-SHA-256": "password=p"}, ("SCRAM-SHA-512",))
    controller = check_args(ConfigsArgs(bootstrap_controller=SERVER, describe=True, broker="1"))
    assert (controller.controllers, controller.bootstrap) == (True, SERVER)


# -- SCRAM credentials ---------------------------------------------------------------------

@pytest.mark.parametrize(("text", "parsed"), [
    ("password=secret", (4096, "secret")),
    ("iterations=8192,password=a,b=c", (8192, "a,b=c")),
    ("iterations=-1,password=p", (4096, "p")),
])
def test_credential_syntax(text: str, parsed: tuple[int, str]) -> None:
    assert tool.parse_credential("SCRAM-SHA-256", text) == parsed


@pytest.mark.parametrize(("text", "message"), [
    ("secret", "Invalid credential property SCRAM-SHA-256=secret"),
    ("password=p,iterations=5000", None),  # iterations must come first: a password
    ("iterations=1000,password=p",
     "Iterations 1000 is less than the minimum 4096 required for SCRAM-SHA-256"),
    ("iterations=,password=p", 'For input string: ""'),
    ("iterations=99999999999,password=p", 'For input string: "99999999999"'),
])
def test_credential_refusals(text: str, message: str | None) -> None:
    if message is None:
        assert tool.parse_credential("SCRAM-SHA-256", text) == (4096, "p,iterations=5000")
        return
    with pytest.raises(ConfigsArgumentError) as raised:
        tool.parse_credential("SCRAM-SHA-256", text)
    assert str(raised.value) == message


class FakeAdmin:
    """Answers a canned response (by the request's type when given a dict of them) and
    keeps the bodies sent."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.sent: list[Any] = []

    async def request(self, body: Any) -> Any:
        self.sent.append(body)
        if isinstance(self.answer, dict):
            return self.answer[type(body)]
        return self.answer


class FakeClients:
    def __init__(self, answer: Any) -> None:
        self.bootstrap = FakeAdmin(answer)

    def brokers_only(self, api: str) -> None:
        return None

    async def ask(self, entity: Entity, body: Any) -> Any:
        return await self.bootstrap.request(body)


def run_alter(clients: FakeClients, **fields: Any) -> str:
    command = check_args(args(alter=True, **fields))
    return asyncio.run(tool.alter(cast(tool.ConfigsClients, clients), command,
                                  new_salt=lambda: b"s" * tool.SALT_BYTES))


def test_scram_upsertions_are_salted_on_the_client() -> None:
    ok = AlterUserScramCredentialsResponse(results=(
        AlterUserScramCredentialsResult(user="alice", error_code=ErrorCode.NONE,
                                        error_message=None),))
    clients = FakeClients(ok)
    message = run_alter(clients, user="alice",
                        add_config="SCRAM-SHA-512=[password=alice-secret],"
                                   "SCRAM-SHA-256=[iterations=8192,password=x]",
                        delete_config=())
    assert message == "Completed updating config for user alice."
    body = clients.bootstrap.sent[0]
    salt = b"s" * 32
    assert [(u.name, u.mechanism, u.iterations, u.salt, u.salted_password)
            for u in body.upsertions] == [
        ("alice", 2, 4096, salt, hashlib.pbkdf2_hmac("sha512", b"alice-secret", salt, 4096)),
        ("alice", 1, 8192, salt, hashlib.pbkdf2_hmac("sha256", b"x", salt, 8192))]
    assert b"alice-secret" not in repr(body).encode()

    run_alter(clients, user="alice", delete_config=("SCRAM-SHA-512",))
    assert [(d.name, d.mechanism) for d in clients.bootstrap.sent[1].deletions] == [
        ("alice", 2)]


def test_an_alter_refused_by_the_controller_is_its_message() -> None:
    refused = AlterUserScramCredentialsResponse(results=(
        AlterUserScramCredentialsResult(
            user="bob", error_code=ErrorCode.RESOURCE_NOT_FOUND,
            error_message="Attempt to delete a user credential that does not exist"),))
    with pytest.raises(AdminError, match=r"^Attempt to delete a user credential"):
        run_alter(FakeClients(refused), user="bob", delete_config=("SCRAM-SHA-256",))


@pytest.mark.parametrize(("fields", "message"), [
    ({"user": "alice", "add_config": "retention.ms=1"},
     "Only quota and SCRAM credential configs can be added for 'users' using "
     "--bootstrap-server. Unexpected config names: retention.ms"),
    ({"user": "alice", "delete_config": ("x",)},
     "Only quota and SCRAM credential configs can be deleted for 'users'"),
    ({"user_defaults": True, "add_config": "SCRAM-SHA-256=[password=p]"},
     "The use of --entity-default or --user-defaults is not allowed with User SCRAM"),
    ({"user": "alice", "add_config": "producer_byte_rate=1,SCRAM-SHA-256=[password=p]"},
     "Cannot alter both quota and SCRAM credential configs simultaneously for 'users'"),
    ({"client": "c", "add_config": "SCRAM-SHA-256=[password=p],x=1"},
     "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected "
     "config names: SCRAM-SHA-256,x"),
    ({"user": "u", "client": "c", "delete_config": ("y",)},
     "Only quota configs can be deleted for 'clients'"),
    ({"ip": "1.2.3.4", "add_config": "producer_byte_rate=1,a=2"},
     "Only connection quota configs can be added for 'ips' using --bootstrap-server. "
     "Unexpected config names: a, producer_byte_rate"),
])
def test_user_keys_refused_before_any_request(fields: dict[str, Any], message: str) -> None:
    clients = FakeClients(None)
    with pytest.raises(ConfigsArgumentError) as raised:
        run_alter(clients, **fields)
    assert str(raised.value).startswith(message)
    assert clients.bootstrap.sent == []


# -- describe and output -------------------------------------------------------------------

def _synonyms(name: str, value: str | None, source: int) -> tuple[Any, ...]:
    """The entry's own value, then (unless it is the default) the default 604800000."""
    chain = [(value, source)] + ([("604800000", 5)] if source != 5 else [])
    return tuple(dc.DescribeConfigsSynonym(name=name, value=v, source=s) for v, s in chain)


def _described(*entries: tuple[str, str | None, int]) -> dc.DescribeConfigsResponse:
    return dc.DescribeConfigsResponse(results=(dc.DescribeConfigsResult(
        error_code=ErrorCode.NONE, error_message=None, resource_type=2,
        resource_name="t", configs=tuple(dc.DescribeConfigsResourceResult(
            name=name, value=value, read_only=False, config_source=source,
            is_sensitive=False, config_type=2, documentation=None,
            synonyms=_synonyms(name, value, source))
            for name, value, source in entries)),))


def test_dynamic_configs_only_sorted_with_kafkas_source_names() -> None:
    clients = FakeClients(_described(("retention.ms", "1000", 1), ("cleanup.policy", "delete", 5),
                                      ("compression.type", "gzip", 1)))
    configs = asyncio.run(tool.resource_configs(
        cast(tool.ConfigsClients, clients), Entity("topics", "t"), synonyms=True,
        describe_all=False))
    report = tool.ResourceReport("topics", "t", False, configs)
    assert tool.lines([report]) == [
        "Dynamic configs for topic t are:",
        "  compression.type=gzip sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "compression.type=gzip, DEFAULT_CONFIG:compression.type=604800000}",
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "DEFAULT_CONFIG:retention.ms=604800000}"]
    every = asyncio.run(tool.resource_configs(
        cast(tool.ConfigsClients, clients), Entity("topics", "t"), synonyms=True,
        describe_all=True))
    assert [c.name for c in every] == ["cleanup.policy", "compression.type", "retention.ms"]
    assert tool.lines([tool.ResourceReport("topics", "t", True, every)])[0] == (
        "All configs for topic t are:")


def test_broker_headers_sensitive_values_and_missing_entities() -> None:
    secret = tool.ConfigLine("ssl.key.password", None, 2, True,
                             ((2, "listener.name.x.ssl.key.password", None),))
    assert tool.lines([tool.ResourceReport("brokers", "1", False, (secret,)),
                       tool.ResourceReport("brokers", "", False, ()),
                       tool.MissingReport(Entity("topics", "nope")),
                       tool.MissingReport(Entity("brokers", "7"))]) == [
        "Dynamic configs for broker 1 are:",
        "  ssl.key.password=null sensitive=true synonyms={DYNAMIC_BROKER_CONFIG:"
        "listener.name.x.ssl.key.password=null}",
        "Default configs for brokers in the cluster are:",
        "The topic 'nope' doesn't exist and doesn't have dynamic config.",
        "The broker '7' doesn't exist and doesn't have dynamic config."]


def test_user_credentials_and_failures() -> None:
    answer = ds.DescribeUserScramCredentialsResponse(
        error_code=ErrorCode.NONE, error_message=None, results=(
            ds.DescribeUserScramCredentialsResult(
                user="alice", error_code=ErrorCode.NONE, error_message=None,
                credential_infos=(ds.CredentialInfo(mechanism=1, iterations=8192),
                                  ds.CredentialInfo(mechanism=2, iterations=4096))),
            ds.DescribeUserScramCredentialsResult(
                user="bob", error_code=ErrorCode.RESOURCE_NOT_FOUND,
                error_message="Attempt to describe a user credential that does not exist: bob",
                credential_infos=())))
    clients = FakeClients({DescribeUserScramCredentialsRequest: answer,
                           DescribeClientQuotasRequest: NO_QUOTAS})
    command = check_args(args(describe=True, entity_types=("users",)))
    reports = asyncio.run(tool.describe(cast(tool.ConfigsClients, clients), command))
    assert clients.bootstrap.sent[1].users == ()  # every user
    assert tool.lines(reports) == [
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096",
        "Error retrieving SCRAM credential configs for user-principal 'bob': "
        "ResourceNotFoundException: Attempt to describe a user credential that does not "
        "exist: bob"]
    assert json.loads(json.dumps(tool.as_json(reports)))[0] == {
        "entityType": "users", "entityName": "alice", "credentials": [
            {"mechanism": "SCRAM-SHA-256", "iterations": 8192},
            {"mechanism": "SCRAM-SHA-512", "iterations": 4096}]}
    # the default user has no credentials to describe
    defaults = check_args(args(describe=True, entity_types=("users",), entity_default=True))
    assert asyncio.run(tool.describe(cast(tool.ConfigsClients, clients), defaults)) == []


def test_the_cli_refuses_on_stderr_before_connecting() -> None:
    result = CliRunner().invoke(app, ["configs", "--bootstrap-server", SERVER, "--describe",
                                      "--entity-type", "groups"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Entity type groups is not supported")
    assert result.stdout == ""
    help_text = CliRunner().invoke(app, ["configs", "--help"])
    assert help_text.exit_code == 0 and "--add-config" in help_text.stdout


# -- client quotas -------------------------------------------------------------------------

def _quotas(*entries: tuple[tuple[tuple[str, str | None], ...], dict[str, float]]
            ) -> DescribeClientQuotasResponse:
    return DescribeClientQuotasResponse(error_code=0, error_message="", entries=tuple(
        dq.EntryData(entity=tuple(dq.EntityData(entity_type=k, entity_name=n) for k, n in e),
                     values=tuple(dq.ValueData(key=k, value=v) for k, v in values.items()))
        for e, values in entries))


def test_quota_lines_name_user_client_and_ip_with_java_doubles() -> None:
    clients = FakeClients(_quotas(
        ((("client-id", None), ("user", "alice")), {"producer_byte_rate": 1024.0,
                                                     "request_percentage": 12.5}),
        ((("user", None),), {"consumer_byte_rate": 2e7})))
    command = check_args(args(describe=True, entity_types=("users", "clients")))
    lines = tool.lines(asyncio.run(tool.describe(cast(tool.ConfigsClients, clients), command)))
    assert sorted(lines) == [
        "Quota configs for the default user-principal are consumer_byte_rate=2.0E7",
        "Quota configs for user-principal 'alice', the default client-id are "
        "producer_byte_rate=1024.0, request_percentage=12.5"]
    (sent,) = clients.bootstrap.sent  # no SCRAM credentials asked for a user's clients
    assert sent.strict and [(c.entity_type, c.match_type, c.match)
                            for c in sent.components] == [("user", 2, None),
                                                          ("client-id", 2, None)]


def test_quota_alter_sends_one_alteration_and_refuses_deleting_what_is_not_set() -> None:
    ok = AlterClientQuotasResponse(entries=(aq.EntryData(error_code=0, error_message=None),))
    clients = FakeClients({DescribeClientQuotasRequest: _quotas(
        ((("ip", "1.2.3.4"),), {"connection_creation_rate": 3.0})),
        AlterClientQuotasRequest: ok})
    assert run_alter(clients, ip="1.2.3.4", add_config="connection_creation_rate=5",
                     delete_config=("connection_creation_rate",)) == (
        "Completed updating config for ip 1.2.3.4.")
    (entry,) = clients.bootstrap.sent[1].entries
    assert [(e.entity_type, e.entity_name) for e in entry.entity] == [("ip", "1.2.3.4")]
    assert [(o.key, o.value, o.remove) for o in entry.ops] == [
        ("connection_creation_rate", 5.0, False), ("connection_creation_rate", 0.0, True)]
    empty = FakeClients(NO_QUOTAS)
    with pytest.raises(AdminError, match=r"^Invalid config\(s\): producer_byte_rate$"):
        run_alter(empty, user_defaults=True, delete_config=("producer_byte_rate",))
    with pytest.raises(ConfigsArgumentError, match="Cannot parse quota configuration value "
                       "for producer_byte_rate: fast"):
        run_alter(empty, user="u", add_config="producer_byte_rate=fast")
