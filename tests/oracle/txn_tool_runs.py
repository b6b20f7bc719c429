"""The runs of kafka-transactions.sh (Kafka's ``TransactionsCommand``) and of ``pykraft
transactions`` that the oracle makes, and the transactions they find (issue 30, item 3).

:func:`open_transactions` leaves on a cluster, in topic ``txns`` (2 partitions): ``tx-open``'s
transaction ongoing on ``txns-0`` (its coordinator knows it), a hanging transaction on
``txns-1`` at offset 0 (a producer id no coordinator knows: ``find-hanging`` finds it) and
``tx-kill``'s transaction ongoing on ``txns-1`` from offset 1. The cluster needs
:data:`PROPERTIES` (no partition verification: see :mod:`open_transactions`). Then, in three
stages:

* :data:`READS`: every read-only command, and each argument or lookup error Kafka reports;
* :data:`WRITES`: the hanging transaction aborted by its start offset, ``tx-kill``'s ended by
  ``forceTerminateTransaction``, an ABORT marker by producer id for a producer that wrote
  nothing (a leader writes it all the same, the producer's epoch then 5);
* :data:`READS_AFTER`: what those changed (nothing hangs any more, the markers' epochs, the
  coordinator's state of ``tx-kill``), and a marker at an epoch older than 5 refused.

:func:`kafka_runs` and :func:`pykraft_runs` make each stage's :class:`~kafka_tools.ToolRun`
for one tool: the same operations and arguments, the global options first as both take them.
Masks: ``describe``'s TransactionDurationMs and ``find-hanging``'s Duration(min), the time
elapsed at the instant asked (each cell with its padding: the column is as wide as its header
whatever the value). Kafka's admin client logs an ERROR line of its own when a call fails
(``[<time>] ERROR ... (org.apache.kafka.clients.admin...)``), which pykraft's tool does not
print: :func:`without_client_logs` drops those lines where the tools are compared.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kafka_tools import ToolRun
from typer.testing import CliRunner

from open_transactions import UNVERIFIED, hanging_transaction, open_transaction

KAFKA_MAIN = "org.apache.kafka.tools.TransactionsCommand"
PYKRAFT_MAIN = "pykraft.cli.main"
BS = ("--bootstrap-server", "{bootstrap}")
TOPIC = "txns"
OPEN, KILL = "tx-open", "tx-kill"
NO_PRODUCER = "424242"  # no producer's id
PROPERTIES = UNVERIFIED
#: below transaction.max.timeout.ms's default (15 minutes): no coordinator aborts them
#: while the runs last
TIMEOUT_MS = 900_000
#: describe's TransactionDurationMs (the last cell but one) with its padding
DURATION_MS = r"(?m)(?<=\t)\d+ *(?=\t[^\t\n]*\t$)"
#: find-hanging's Duration(min) (the last cell) with its padding
DURATION_MIN = r"(?m)(?<=\t)\d+ *(?=\t$)"
_CLIENT_LOG = re.compile(r"^\[<time>\] (ERROR|WARN) .*\n", re.MULTILINE)

Spec = tuple[str, tuple[str, ...], tuple[str, ...]]  # operation, arguments, masks


def open_transactions(bootstrap: str) -> None:
    """The transactions of the module docstring, on a cluster with no ``txns`` yet."""
    from pykraft.cli.main import app

    created = CliRunner().invoke(app, ["topics", "--bootstrap-server", bootstrap, "--create",
                                       "--topic", TOPIC, "--partitions", "2",
                                       "--replication-factor", "1"])
    assert created.exit_code == 0, created.output
    open_transaction(bootstrap, TOPIC, 0, OPEN, timeout_ms=TIMEOUT_MS)
    hanging = hanging_transaction(bootstrap, TOPIC, 1)
    assert hanging.first_offset == 0, hanging
    killed = open_transaction(bootstrap, TOPIC, 1, KILL, timeout_ms=TIMEOUT_MS)
    assert killed.first_offset == 1, killed


READS: list[Spec] = [
    ("list", ("list",), ()),
    ("list --duration-filter", ("list", "--duration-filter", "0"), ()),
    ("list --transactional-id-pattern", ("list", "--transactional-id-pattern", "tx-o.*"), ()),
    ("list pattern not a regex", ("list", "--transactional-id-pattern", "["), ()),
    ("describe", ("describe", "--transactional-id", OPEN), (DURATION_MS,)),
    ("describe unknown id", ("describe", "--transactional-id", "nobody"), ()),
    ("describe-producers", ("describe-producers", "--topic", TOPIC, "--partition", "0"), ()),
    ("describe-producers --broker-id", ("describe-producers", "--topic", TOPIC,
                                        "--partition", "1", "--broker-id", "1000"), ()),
    ("find-hanging --topic", ("find-hanging", "--topic", TOPIC,
                              "--max-transaction-timeout", "0"), (DURATION_MIN,)),
    ("find-hanging --broker-id", ("find-hanging", "--broker-id", "1000",
                                  "--max-transaction-timeout", "0"), (DURATION_MIN,)),
    ("find-hanging --partition", ("find-hanging", "--topic", TOPIC, "--partition", "1",
                                  "--max-transaction-timeout", "0"), (DURATION_MIN,)),
    ("find-hanging default timeout", ("find-hanging", "--topic", TOPIC), ()),
    ("find-hanging missing topic", ("find-hanging", "--topic", "missing"), ()),
    ("find-hanging no scope", ("find-hanging",), ()),
    ("abort no open transaction there", ("abort", "--topic", TOPIC, "--partition", "1",
                                         "--start-offset", "7"), ()),
    ("abort unidentified", ("abort", "--topic", TOPIC, "--partition", "1"), ()),
]
WRITES: list[Spec] = [
    ("abort --start-offset", ("abort", "--topic", TOPIC, "--partition", "1",
                              "--start-offset", "0"), ()),
    ("forceTerminateTransaction", ("forceTerminateTransaction", "--transactionalId", KILL), ()),
    # a marker needs no open transaction: the leader writes it, the producer's epoch now 5
    ("abort --producer-id", ("abort", "--topic", TOPIC, "--partition", "0", "--producer-id",
                             NO_PRODUCER, "--producer-epoch", "5", "--coordinator-epoch", "-1"),
     ()),
]
READS_AFTER: list[Spec] = [
    ("find-hanging after abort", ("find-hanging", "--topic", TOPIC,
                                  "--max-transaction-timeout", "0"), ()),
    ("describe-producers after abort", ("describe-producers", "--topic", TOPIC,
                                        "--partition", "1"), ()),
    ("describe after forceTerminateTransaction", ("describe", "--transactional-id", KILL), ()),
    ("list after", ("list",), ()),
    ("abort --producer-id at a stale epoch", ("abort", "--topic", TOPIC, "--partition", "0",
                                              "--producer-id", NO_PRODUCER, "--producer-epoch",
                                              "3", "--coordinator-epoch", "0"), ()),
]


def kafka_runs(specs: Sequence[Spec]) -> list[ToolRun]:
    return [ToolRun("kafka-transactions", operation, KAFKA_MAIN, (*BS, *args), masks=masks)
            for operation, args, masks in specs]


def pykraft_runs(specs: Sequence[Spec]) -> list[ToolRun]:
    return [ToolRun("pykraft transactions", operation, PYKRAFT_MAIN,
                    ("transactions", *BS, *args), masks=masks)
            for operation, args, masks in specs]


def without_client_logs(stderr: str) -> str:
    """Kafka's stderr without its admin client's log lines (normalised)."""
    return _CLIENT_LOG.sub("", stderr)


__all__ = ["PROPERTIES", "READS", "READS_AFTER", "WRITES", "kafka_runs", "open_transactions",
           "pykraft_runs", "without_client_logs"]
