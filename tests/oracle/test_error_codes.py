"""pykraft's error codes are the pinned Kafka's: names, codes and retriability.

``protocol/error_codes.py`` is generated from Kafka's ``Errors`` table; this renders that
table again from the running Kafka's jars and requires the checked-in module to equal it.
"""

from __future__ import annotations

import gen_error_codes  # scripts/, put on sys.path by oracle_kafka
from oracle_cluster import KafkaInstall
from oracle_kafka import skip_module_off_ci

from pykraft.protocol.errors import ErrorCode, error_name, for_code

skip_module_off_ci()


def test_the_error_table_is_the_pinned_kafkas(kafka: KafkaInstall) -> None:
    rows = gen_error_codes.kafka_table(list(kafka.classpath))
    assert gen_error_codes.OUTPUT.read_text() == gen_error_codes.render(rows, kafka.version)
    assert [(code.name, int(code), code.retriable) for code in ErrorCode] == rows


def test_names_and_unknown_codes_read_as_kafka_reads_them() -> None:
    assert error_name(6) == "NOT_LEADER_OR_FOLLOWER"
    assert error_name(-2) == "UNKNOWN_ERROR_CODE_-2"
    assert for_code(32_000) is ErrorCode.UNKNOWN_SERVER_ERROR
