"""A change of the log cleaner's settings that Kafka's broker refuses before forwarding it
(``ConfigAdminManager.preprocess``) is answered INVALID_REQUEST with Kafka 4.4's message;
the request's other resources keep their place in the answer."""

from __future__ import annotations

from replica_fixtures import with_records

from pykraft.broker.cleaner_alterations import cleaner_refusals, with_refusals
from pykraft.image.image import MetadataImage
from pykraft.log.cleaner_config import CleanerConfig
from pykraft.messages.kafka import alter_configs_request as legacy
from pykraft.messages.kafka import incremental_alter_configs_request as incremental
from pykraft.messages.kafka import incremental_alter_configs_response as answered
from pykraft.protocol.errors import ErrorCode
from pykraft.records.metadata import ConfigRecord

BROKER, TOPIC = 4, 2
SET, DELETE = 0, 1
MIB = 1024 * 1024
DOUBLE = ("Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads "
          "cannot be increased to more than double the current value 1 for configuration "
          "Invalid dynamic configuration")
PER_THREAD = ("requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per "
              "cleaner thread.")


def _incremental(*resources: tuple[int, str, tuple[tuple[str, int, str | None], ...]]
                 ) -> incremental.IncrementalAlterConfigsRequest:
    return incremental.IncrementalAlterConfigsRequest(resources=tuple(
        incremental.AlterConfigsResource(
            resource_type=kind, resource_name=name, configs=tuple(
                incremental.AlterableConfig(name=key, config_operation=op, value=value)
                for key, op, value in changes))
        for kind, name, changes in resources))


def _refused(body: incremental.IncrementalAlterConfigsRequest | legacy.AlterConfigsRequest,
             image: MetadataImage | None = None,
             static: dict[str, str] | None = None) -> dict[int, str]:
    """The refusals of a broker 1 running on ``static`` and ``image``'s configs."""
    configs = (image or MetadataImage()).configs
    running = CleanerConfig.from_layers(static or {}, configs.broker(""), configs.broker("1"))
    return cleaner_refusals(body, current=running, static=static or {}, configs=configs,
                            node_id=1)


def test_kafkas_refusals_of_this_broker_and_the_cluster_default() -> None:
    body = _incremental((BROKER, "1", (("log.cleaner.threads", SET, "3"),)),
                        (BROKER, "", (("log.cleaner.threads", SET, "3"),)),
                        (BROKER, "2", (("log.cleaner.threads", SET, "3"),)),  # not ours
                        (TOPIC, "t", (("retention.ms", SET, "1"),)),
                        (BROKER, "1", (("log.cleaner.threads", SET, "2"),)),
                        (BROKER, "1", (("log.cleaner.dedupe.buffer.size", SET, str(MIB)),)),
                        (BROKER, "1", (("log.cleaner.backoff.ms", SET, "soon"),)))
    assert _refused(body) == {0: DOUBLE, 1: DOUBLE, 5: PER_THREAD}


def test_the_layers_after_the_change_are_checked() -> None:
    """2 threads need more than 2 MiB; deleting the cluster default's threads falls back to
    the file's; AlterConfigs replaces the resource's whole dynamic config."""
    static = {"log.cleaner.dedupe.buffer.size": str(8 * MIB)}
    two = with_records(MetadataImage(), ConfigRecord(
        resource_type=BROKER, resource_name="", name="log.cleaner.threads", value="2"))
    assert _refused(_incremental((BROKER, "1", (
        ("log.cleaner.dedupe.buffer.size", SET, str(2 * MIB)),))), two, static) == {
        0: PER_THREAD}
    assert _refused(_incremental((BROKER, "1", (
        ("log.cleaner.dedupe.buffer.size", SET, str(2 * MIB)),
        ("log.cleaner.threads", SET, "1")))), two, static) == {}
    six = with_records(two, ConfigRecord(resource_type=BROKER, resource_name="",
                                         name="log.cleaner.threads", value="6"))
    assert _refused(_incremental((BROKER, "", (("log.cleaner.threads", DELETE, None),))),
                    six, {"log.cleaner.threads": "4", **static}) == {}
    replacing = legacy.AlterConfigsRequest(resources=(legacy.AlterConfigsResource(
        resource_type=BROKER, resource_name="", configs=(legacy.AlterableConfig(
            name="log.retention.ms", value="1"),)),))
    # the cluster default's 6 threads dropped: the file's 4 may follow 6, its 2 may not
    assert _refused(replacing, six, {"log.cleaner.threads": "4", **static}) == {}
    assert _refused(replacing, six, {"log.cleaner.threads": "2", **static}) == {0: (
        "Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads "
        "cannot be reduced to less than half the current value 6 for configuration Invalid "
        "dynamic configuration")}


def test_the_answer_keeps_the_request_order() -> None:
    body = _incremental((TOPIC, "a", ()), (BROKER, "1", ()), (TOPIC, "b", ()))
    forwarded = answered.IncrementalAlterConfigsResponse(throttle_time_ms=5, responses=(
        answered.AlterConfigsResourceResponse(resource_type=TOPIC, resource_name="a"),
        answered.AlterConfigsResourceResponse(resource_type=TOPIC, resource_name="b",
                                              error_code=ErrorCode.INVALID_CONFIG)))
    merged = with_refusals(body, {1: DOUBLE}, forwarded)
    assert merged.throttle_time_ms == 5
    assert [(r.resource_name, r.error_code, r.error_message) for r in merged.responses] == [
        ("a", 0, ""), ("1", ErrorCode.INVALID_REQUEST, DOUBLE),
        ("b", ErrorCode.INVALID_CONFIG, "")]
    alone = with_refusals(_incremental((BROKER, "", ())), {0: PER_THREAD}, None)
    assert [(r.resource_name, r.error_code) for r in alone.responses] == [
        ("", ErrorCode.INVALID_REQUEST)]
