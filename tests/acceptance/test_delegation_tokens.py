"""Delegation tokens on real processes, with Kafka 4.4's tools and its Java client: a
``cluster up --secure`` cluster (1 controller, 3 brokers, SASL_SSL with SCRAM-SHA-512, the
StandardAuthorizer) with ``delegation.token.secret.key`` on every node, and ``alice``, a
SCRAM user with ACLs to write and read one topic in one group.

- alice creates a token with ``pykraft delegation-tokens`` and one with Kafka's
  ``DelegationTokenCommand``; both print the same lines, and both tools describe her two
  tokens alike.
- Kafka's console producer logs in with the first token (SCRAM with ``tokenauth=true``,
  as the token's owner alice, her ACLs applying) and writes; Kafka's console consumer logs
  in with the second and reads every record back in her group. A client logged in with a
  token may not make another one.
- Either tool renews a token to an hour; the describe shows the new expiry date.
- Kafka's tool expires the first token at once: renewing it fails alike with either tool
  (the call's line printed, exit code 1), its logins are refused with Kafka's message,
  while the second token still logs in.
- The second token renewed for 1 ms expires; the controller removes it only an hour later,
  but its logins get a session that ends at once (Kafka bounds a session by the token's
  expiry), so a client logged in with it gets nothing done. On a Kafka 4.4 controller and
  broker the same steps end in the same TopicCommand timeout (checked by hand with
  tests/interop's SaslCluster, 2026-11-30).

Only the Java client sends the ``tokenauth`` extension: kafka-python's and librdkafka's
SCRAM first messages carry none. Skips off CI when Kafka cannot be fetched.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from broker_harness import wait_for
from java_kafka import kafka_tool, skip_module_off_ci, tool_outcome
from secure_harness import SaslSsl, brokers_seen, sasl_ssl_cluster

from pykraft.errors import PyKraftError
from pykraft.messages.kafka.describe_delegation_token_request import (
    DescribeDelegationTokenOwner,
    DescribeDelegationTokenRequest,
)
from pykraft.messages.kafka.describe_delegation_token_response import (
    DescribeDelegationTokenResponse,
)
from pykraft.security.jaas import SCRAM_LOGIN_MODULE
from pykraft.tools.admin_client import AdminClient, admin_settings
from pykraft.tools.secure_cluster import CLIENT_MECHANISM

skip_module_off_ci()
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
TOKENS = "org.apache.kafka.tools.DelegationTokenCommand"
PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
ALICE, PASSWORD = "alice", "alice-secret"
TOPIC, GROUP = "delegated", "delegated-group"
COUNT = 25
#: describe alice's tokens
ALICE_TOKENS = ("--describe", "--owner-principal", f"User:{ALICE}")
HOUR_MS = 3_600_000
#: Kafka's message for a refused SCRAM login (the broker's, relayed by the client)
REFUSED = ("Authentication failed during authentication due to invalid credentials with "
           f"SASL mechanism {CLIENT_MECHANISM}")
#: Kafka's message for a token request from a client logged in with a token
NOT_WITH_A_TOKEN = ("Delegation Token requests are not allowed on PLAINTEXT/1-way SSL "
                    "channels and on delegation token authenticated channels.")
#: what a broker logs closing the session of an expired token at its first request
EXPIRED_SESSION = "credential's expiry) without re-authentication"
#: the table row of a token: id, HMAC (standard base64), owner, requester, renewers, dates
_ROW = re.compile(r"^(\S+)\s+([A-Za-z0-9+/]+=*)\s+User:alice\s+User:alice\s+\[\]\s+"
                  r"(\S+)\s+(\S+)\s+(\S+)\s*$", re.MULTILINE)


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[SaslSsl]:
    with sasl_ssl_cluster(tmp_path / "cluster", more={
            "delegation.token.secret.key": "acceptance-token-secret"}) as made:
        admin = ("--command-config", str(made.admin_properties))
        assert tool_outcome(made.cluster, None, "topics", *admin, "--create", "--topic",
                            TOPIC, "--partitions", "1", "--replication-factor", "3")[0] == 0
        for options in (("--producer", "--topic", TOPIC),
                        ("--consumer", "--topic", TOPIC, "--group", GROUP)):
            assert tool_outcome(made.cluster, None, "acls", *admin, "--add",
                                "--allow-principal", f"User:{ALICE}", *options)[0] == 0
        assert tool_outcome(made.cluster, None, "configs", *admin, "--alter", "--entity-type",
                            "users", "--entity-name", ALICE, "--add-config",
                            f"{CLIENT_MECHANISM}=[password={PASSWORD}]")[0] == 0
        # a broker applies the metadata log in order: one that logs alice in (her
        # credential, written last) has her topic and ACLs too
        alice = made.properties_file(ALICE, PASSWORD)
        for broker in made.bootstrap.split(","):
            wait_for(f"alice logs in on {broker}",
                     lambda at=broker: brokers_seen(at, alice) or None)
        yield made


def token_properties(secure: SaslSsl, token: tuple[str, str]) -> Path:
    """A client's properties logging in with ``token`` (its id and HMAC)."""
    token_id, hmac = token
    path: Path = secure.cluster.base / f"token-{token_id}.properties"
    properties = {**secure.properties(token_id, hmac), "sasl.jaas.config": (
        f'{SCRAM_LOGIN_MODULE} required username="{token_id}" password="{hmac}" '
        'tokenauth="true";'),
        # a refused admin call's bound
        "request.timeout.ms": "10000", "default.api.timeout.ms": "20000"}
    path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    return path


def alice(secure: SaslSsl) -> tuple[str, str]:
    """A tool's options logging in as alice."""
    return "--command-config", str(secure.properties_file(ALICE, PASSWORD))


def tokens(secure: SaslSsl, tool: str | None, *args: str) -> str:
    """What ``pykraft delegation-tokens`` (``tool`` None) or Kafka's prints, as alice."""
    command = ("delegation-tokens",) if tool is None else ()
    out: str
    code, out = tool_outcome(secure.cluster, tool, *command, *alice(secure), *args)
    assert code == 0, out
    return out


def created(secure: SaslSsl, tool: str | None) -> tuple[tuple[str, str], str]:
    """A new token of alice's, made by ``tool``: its id and HMAC, and what the tool printed
    with them (and its dates) as ``<id>``, ``<hmac>`` and ``<date>``."""
    out = tokens(secure, tool, "--create", "--max-life-time-period", "-1")
    (row,) = _ROW.findall(out)
    token_id, hmac = row[:2]
    shape = out.replace(token_id, "<id>").replace(hmac, "<hmac>")
    return (token_id, hmac), re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d", "<date>", shape)


def expiry(described: str, token: tuple[str, str]) -> str:
    """A token's EXPIRYDATE in a describe's table."""
    (date,) = [str(row[3]) for row in _ROW.findall(described) if row[0] == token[0]]
    return date


def expiries(secure: SaslSsl, broker: str) -> dict[str, int] | None:
    """Token id -> expiry timestamp (ms) of alice's tokens as ``broker`` holds them (None
    while it does not answer)."""
    settings = admin_settings(broker, secure.properties_file(ALICE, PASSWORD))

    async def run() -> DescribeDelegationTokenResponse:
        async with AdminClient(settings) as admin:
            answer: DescribeDelegationTokenResponse = await admin.request(
                DescribeDelegationTokenRequest(owners=(DescribeDelegationTokenOwner(
                    principal_type="User", principal_name=ALICE),)))
            return answer
    try:
        answer = asyncio.run(run())
    except (PyKraftError, OSError, TimeoutError):
        return None
    return {t.token_id: t.expiry_timestamp for t in answer.tokens}


def on_every_broker(secure: SaslSsl, what: str,
                    holds: Callable[[dict[str, int]], bool]) -> None:
    """Until alice's tokens as each broker holds them pass ``holds``: the clients that log
    in next may pick any broker."""
    for broker in secure.bootstrap.split(","):
        wait_for(f"{what} on {broker}", lambda at=broker: (
            (seen := expiries(secure, at)) is not None and holds(seen)) or None)


def produce(secure: SaslSsl, token: tuple[str, str], values: list[str]) -> None:
    done = kafka_tool(secure.cluster, PRODUCER, "--topic", TOPIC, "--command-config",
                      str(token_properties(secure, token)), stdin="".join(
                          f"{v}\n" for v in values))
    assert done.returncode == 0, done.stderr[-3000:]


def consume(secure: SaslSsl, token: tuple[str, str], count: int) -> list[str]:
    done = kafka_tool(secure.cluster, CONSUMER, "--topic", TOPIC, "--group", GROUP,
                      "--from-beginning", "--max-messages", str(count), "--timeout-ms",
                      "60000", "--command-config", str(token_properties(secure, token)))
    assert done.returncode == 0, done.stderr[-3000:]
    values: list[str] = done.stdout.splitlines()
    return values


def topics_listed(secure: SaslSsl, token: tuple[str, str]) -> tuple[int, str, str]:
    """Kafka's TopicCommand --list logged in with ``token``: its exit code, what it printed
    (the topics alice may see) and what it logged (why it failed)."""
    done = kafka_tool(secure.cluster, TOPIC_COMMAND, "--list", "--command-config",
                      str(token_properties(secure, token)))
    return done.returncode, done.stdout, done.stderr


def test_tokens_from_either_tool_log_the_java_client_in_until_expired(
        secure: SaslSsl) -> None:
    ours, our_lines = created(secure, None)
    theirs, their_lines = created(secure, TOKENS)
    assert our_lines == their_lines
    on_every_broker(secure, "both tokens", lambda seen: {ours[0], theirs[0]} <= set(seen))
    assert our_lines.startswith("Calling create token operation with renewers :[] , "
                                "max-life-time-period :-1\n"
                                "Created delegation token with tokenId : <id>\n")
    # without an owner, Kafka's tool sends an empty owner list: no token
    assert tokens(secure, TOKENS, "--describe") == tokens(secure, None, "--describe")
    described = tokens(secure, None, *ALICE_TOKENS)
    assert tokens(secure, TOKENS, *ALICE_TOKENS) == described
    assert sorted(row[0] for row in _ROW.findall(described)) == sorted([ours[0], theirs[0]])

    values = [f"delegated-{i}" for i in range(COUNT)]
    produce(secure, ours, values)
    done = kafka_tool(secure.cluster, TOKENS, "--create", "--max-life-time-period", "-1",
                      "--command-config", str(token_properties(secure, ours)))
    assert done.returncode != 0 and NOT_WITH_A_TOKEN in done.stderr, done.stderr[-3000:]
    assert consume(secure, theirs, COUNT) == values

    renewed = {tool: tokens(secure, tool, "--renew", "--hmac", token[1],
                            "--renew-time-period", str(HOUR_MS))
               for tool, token in ((None, ours), (TOKENS, theirs))}
    described = tokens(secure, TOKENS, *ALICE_TOKENS)
    for tool, token in ((None, ours), (TOKENS, theirs)):
        assert renewed[tool] == (
            f"Calling renew token operation with hmac :{token[1]} , renew-time-period "
            f":{HOUR_MS}\nCompleted renew operation. New expiry date : "
            f"{expiry(described, token)}")  # Kafka's printf: no newline

    assert topics_listed(secure, ours)[:2] == (0, f"{TOPIC}\n")
    expired = tokens(secure, TOKENS, "--expire", "--hmac", ours[1], "--expiry-time-period",
                     "-1")
    assert expired.startswith(f"Calling expire token operation with hmac :{ours[1]} , "
                              "expire-time-period :-1\nCompleted expire operation.")
    on_every_broker(secure, "the first token gone", lambda seen: set(seen) == {theirs[0]})
    # a failed call: both tools print the call's line, then fail
    renew_expired = ("--renew", "--hmac", ours[1], "--renew-time-period", str(HOUR_MS))
    assert tool_outcome(secure.cluster, TOKENS, *alice(secure), *renew_expired) == \
        tool_outcome(secure.cluster, None, "delegation-tokens", *alice(secure),
                     *renew_expired) == (1, renewed[None].splitlines()[0] + "\n")
    code, printed, logged = topics_listed(secure, ours)
    assert code != 0 and REFUSED in printed + logged, (printed, logged[-3000:])
    assert topics_listed(secure, theirs)[:2] == (0, f"{TOPIC}\n")

    # renewed for 1 ms, the second token expires; the controller removes expired tokens
    # only every delegation.token.expiry.check.interval.ms (1 h), but as in Kafka the
    # session a token opens ends at its expiry: at once for an expired one
    tokens(secure, None, "--renew", "--hmac", theirs[1], "--renew-time-period", "1")
    on_every_broker(secure, "the second token past its expiry", lambda seen: (
        theirs[0] in seen and seen[theirs[0]] < time.time() * 1000))
    code, printed, logged = topics_listed(secure, theirs)
    assert code != 0 and "Timed out waiting for a node assignment" in printed, (
        printed, logged[-3000:])
    assert any(EXPIRED_SESSION in log.read_text() for log in secure.broker_logs())
