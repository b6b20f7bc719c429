"""Kafka's clients on the SASL_SSL cluster of :mod:`secure_harness`, for the secure matrix
(tests/acceptance/test_secure_matrix.py): confluent-kafka, kafka-python, aiokafka, kcat and
the Java client behind one interface, logged in as one user.

Each operation either succeeds or raises :class:`RefusedError` with the Kafka error the client
reported (``TOPIC_AUTHORIZATION_FAILED``, ``SASL_AUTHENTICATION_FAILED``, ...) and the
client's own words for it (librdkafka's ``_AUTHENTICATION``, kafka-python's
``SaslAuthenticationFailedError``, Java's ``SaslAuthenticationException``, ...). An error the
adapter does not recognise propagates as the client raised it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

from process_harness import readable
from secure_harness import SaslSsl

from group_member import subscribe_with_metadata

#: The most a client may take to join its group and read everything: a bound on the wait,
#: not a timing assertion (kafka-python's SASL_SSL group read nothing in 30 s on a 2-core
#: machine running two test suites at once).
DEADLINE_S = 90.0
Record = tuple[int, int, str]  # partition, offset, value
Placed = list[tuple[int, int]] | None  # (partition, offset) per value sent; None: not told
T = TypeVar("T")

#: the Java client's exceptions and the errors Kafka's ``Errors`` maps them to
JAVA_ERRORS = {"TopicAuthorizationException": "TOPIC_AUTHORIZATION_FAILED",
               "GroupAuthorizationException": "GROUP_AUTHORIZATION_FAILED",
               "ClusterAuthorizationException": "CLUSTER_AUTHORIZATION_FAILED",
               "SaslAuthenticationException": "SASL_AUTHENTICATION_FAILED"}
#: librdkafka's messages (kcat prints them) and the errors they stand for
LIBRDKAFKA_ERRORS = {"Topic authorization failed": "TOPIC_AUTHORIZATION_FAILED",
                     "Group authorization failed": "GROUP_AUTHORIZATION_FAILED",
                     "SASL authentication error": "SASL_AUTHENTICATION_FAILED"}
SCRAM_FIXED = (2, 6, 1)  # librdkafka's first release whose SCRAM final message Kafka 4 accepts


class RefusedError(Exception):
    """The client reported ``error`` (Kafka's name for it) in its own words ``said``."""

    def __init__(self, error: str, said: str) -> None:
        super().__init__(f"{error}: {said}")
        self.error = error
        self.said = said


class Client(Protocol):
    name: ClassVar[str]
    creates_topics: ClassVar[bool]  # an admin API that creates topics
    creates_acls: ClassVar[bool]  # an admin API that creates ACLs

    def create_topic(self, topic: str, partitions: int, replicas: int) -> None: ...

    def create_acl(self, topic: str) -> None:
        """An ACL letting everyone read ``topic`` (a CLUSTER ALTER request)."""

    def topic_partitions(self, topic: str) -> int:
        """The topic's partition count as the client's Metadata shows it."""

    def produce(self, topic: str, prefix: str, count: int) -> Placed:
        """``<prefix>-0`` .. ``<prefix>-<count-1>``, each acknowledged by all replicas."""

    def consume(self, topic: str, partitions: int, count: int) -> list[Record]:
        """Every partition assigned (no group), from the beginning, until ``count``."""

    def group(self, topic: str, group: str, count: int) -> list[Record]:
        """Subscribed in ``group`` until ``count`` records, then their offsets committed."""


def values(prefix: str, count: int) -> list[str]:
    """What each client sends, in order: ``<prefix>-<index>``, keyed by the index."""
    return [f"{prefix}-{i}" for i in range(count)]


class Heard:
    """What a Python client logged (its logger and children at INFO and above) while a
    :func:`heard` block ran: kafka-python and aiokafka log a refused login and a topic they
    may not describe rather than raise them."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def unauthorized(self) -> None:
        """Raise the refusal of a topic the client only logged (reading by assignment)."""
        for line in self.lines:
            if "is not authorized for this client" in line:
                raise RefusedError("TOPIC_AUTHORIZATION_FAILED", line)

    def refusal(self, error: Exception) -> RefusedError:
        """The client's error as a refusal: a broker error by its Kafka name, or a failed
        bootstrap whose connections were refused a login (as logged)."""
        name = getattr(error, "message", None)
        if isinstance(name, str) and name.isupper():
            return RefusedError(name, repr(error))
        for line in self.lines:
            if "SaslAuthenticationFailed" in line:
                return RefusedError("SASL_AUTHENTICATION_FAILED", line)
        raise error


@contextmanager
def heard(name: str) -> Iterator[Heard]:
    found = Heard()

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            found.lines.append(record.getMessage())

    logger, handler = logging.getLogger(name), Keep(logging.INFO)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield found
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


# -- confluent-kafka ---------------------------------------------------------------------------


class Confluent:
    name = "confluent-kafka"
    creates_topics = True
    creates_acls = True

    def __init__(self, secure: SaslSsl, user: str, password: str) -> None:
        self.config: dict[str, Any] = dict(secure.librdkafka(user, password))
        self._errors: list[Any] = []
        self.config["error_cb"] = self._errors.append

    def _check(self, error: Any) -> None:
        """A KafkaError the client reported (a message's, a delivery's or error_cb's)."""
        from confluent_kafka import KafkaError

        if error.code() == KafkaError._AUTHENTICATION:
            raise RefusedError("SASL_AUTHENTICATION_FAILED", f"{error.name()}: {error.str()}")
        if not error.name().startswith("_"):  # a broker's error
            raise RefusedError(error.name(), error.str())

    def _raise_reported(self) -> None:
        for error in self._errors:
            self._check(error)

    def _admin_result(self, future: Any) -> None:
        from confluent_kafka import KafkaException

        try:
            future.result(DEADLINE_S)
        except KafkaException as exc:
            self._check(exc.args[0])
            raise

    def create_topic(self, topic: str, partitions: int, replicas: int) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(self.config)
        self._admin_result(admin.create_topics([NewTopic(topic, partitions, replicas)])[topic])

    def create_acl(self, topic: str) -> None:
        from confluent_kafka.admin import (
            AclBinding,
            AclOperation,
            AclPermissionType,
            AdminClient,
            ResourcePatternType,
            ResourceType,
        )

        binding = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:*",
                             "*", AclOperation.READ, AclPermissionType.ALLOW)
        admin = AdminClient(self.config)  # alive until its future is done
        self._admin_result(admin.create_acls([binding])[binding])

    def topic_partitions(self, topic: str) -> int:
        from confluent_kafka.admin import AdminClient

        return len(AdminClient(self.config).list_topics(topic, timeout=DEADLINE_S)
                   .topics[topic].partitions)

    def produce(self, topic: str, prefix: str, count: int) -> Placed:
        from confluent_kafka import Producer

        producer = Producer({**self.config, "acks": "all"})
        reports: dict[int, Any] = {}  # index sent -> its Message or KafkaError

        def report(index: int) -> Callable[[Any, Any], None]:
            return lambda error, message: reports.__setitem__(index, error or message)
        for i, value in enumerate(values(prefix, count)):
            producer.produce(topic, key=str(i), value=value, on_delivery=report(i))
        deadline = time.monotonic() + DEADLINE_S
        while len(reports) < count and time.monotonic() < deadline:
            producer.poll(0.1)
            self._raise_reported()
        for delivered in reports.values():
            if not hasattr(delivered, "offset"):
                self._check(delivered)
        assert len(reports) == count, f"{len(reports)} of {count} deliveries reported"
        return [(reports[i].partition(), reports[i].offset()) for i in range(count)]

    def _poll(self, consumer: Any, count: int, unrelated: str = "") -> list[Record]:
        """Records until ``count``; an error named ``unrelated`` is passed over."""
        read: list[Record] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(read) < count and time.monotonic() < deadline:
            for message in consumer.consume(100, 0.2):
                error = message.error()
                if error is not None and error.name() != unrelated:
                    self._check(error)
                    raise AssertionError(error)
                if error is None:
                    read.append((message.partition(), message.offset(),
                                 message.value().decode()))
            self._raise_reported()
        return read

    def _check_topic(self, consumer: Any, topic: str) -> None:
        """The topic's Metadata error, if any (or the refused login that kept it away)."""
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + DEADLINE_S
        while True:
            try:
                error = consumer.list_topics(topic, timeout=1).topics[topic].error
                break
            except KafkaException:
                self._raise_reported()  # error_cb heard why (a refused login)
                if time.monotonic() > deadline:
                    raise
        if error is not None:
            self._check(error)

    def consume(self, topic: str, partitions: int, count: int) -> list[Record]:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        consumer = Consumer({**self.config, "group.id": "unused-with-assign",
                             "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        try:
            # reading by assignment librdkafka keeps a topic's Metadata error to itself (it
            # only logs it at debug level): the application asks, as kcat does
            self._check_topic(consumer, topic)
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                             for p in range(partitions)])
            # librdkafka needs a group.id and looks its coordinator up even to read by
            # assignment: a user without the group's ACL hears of it, and reads on
            return self._poll(consumer, count, unrelated="GROUP_AUTHORIZATION_FAILED")
        finally:
            consumer.close()

    def group(self, topic: str, group: str, count: int) -> list[Record]:
        from confluent_kafka import Consumer

        consumer = Consumer({**self.config, "group.id": group, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        try:
            consumer.subscribe([topic])
            read = self._poll(consumer, count)
            consumer.commit(asynchronous=False)
            return read
        finally:
            consumer.close()


# -- kafka-python ------------------------------------------------------------------------------


class KafkaPython:
    name = "kafka-python"
    creates_topics = True
    creates_acls = True

    def __init__(self, secure: SaslSsl, user: str, password: str) -> None:
        self.config = {**secure.kafka_python(user, password), "bootstrap_timeout_ms": 10_000,
                       "request_timeout_ms": 10_000}
        self._heard = Heard()

    def _run(self, call: Callable[[], T]) -> T:
        from kafka.errors import KafkaError

        with heard("kafka") as self._heard:
            try:
                return call()
            except KafkaError as error:
                raise self._heard.refusal(error) from error

    def _admin(self, call: Callable[[Any], T]) -> T:
        from kafka.admin import KafkaAdminClient

        def run() -> T:
            admin = KafkaAdminClient(**self.config)
            try:
                return call(admin)
            finally:
                admin.close()
        return self._run(run)

    def create_topic(self, topic: str, partitions: int, replicas: int) -> None:
        from kafka.admin import NewTopic

        self._admin(lambda admin: admin.create_topics([NewTopic(topic, partitions, replicas)]))

    def create_acl(self, topic: str) -> None:
        from kafka.admin import (
            ACL,
            ACLOperation,
            ACLPermissionType,
            ResourcePattern,
            ResourceType,
        )

        acl = ACL("User:*", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                  ResourcePattern(ResourceType.TOPIC, topic))
        result = self._admin(lambda admin: admin.create_acls([acl]))
        for error in result["failed"]:  # kafka-python lists the error classes
            raise RefusedError(error.message, error.__name__)

    def topic_partitions(self, topic: str) -> int:
        from kafka import KafkaConsumer

        def run() -> int:
            consumer = KafkaConsumer(**self.config)
            try:
                return len(consumer.partitions_for_topic(topic) or ())
            finally:
                consumer.close()
        return self._run(run)

    def produce(self, topic: str, prefix: str, count: int) -> Placed:
        from kafka import KafkaProducer

        def run() -> Placed:
            producer = KafkaProducer(**self.config, acks="all", max_block_ms=20_000)
            try:
                futures = [producer.send(topic, key=str(i).encode(), value=value.encode())
                           for i, value in enumerate(values(prefix, count))]
                producer.flush(DEADLINE_S)
                return [(m.partition, m.offset)
                        for m in (f.get(DEADLINE_S) for f in futures)]
            finally:
                producer.close(timeout=10)
        return self._run(run)

    def _poll(self, consumer: Any, count: int) -> list[Record]:
        read: list[Record] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(read) < count and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                read += [(r.partition, r.offset, r.value.decode()) for r in records]
            self._heard.unauthorized()
        return read

    def consume(self, topic: str, partitions: int, count: int) -> list[Record]:
        from kafka import KafkaConsumer, TopicPartition

        def run() -> list[Record]:
            consumer = KafkaConsumer(**self.config, group_id=None, enable_auto_commit=False,
                                     fetch_max_wait_ms=100)
            try:
                consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
                consumer.seek_to_beginning()
                return self._poll(consumer, count)
            finally:
                consumer.close()
        return self._run(run)

    def group(self, topic: str, group: str, count: int) -> list[Record]:
        from kafka import KafkaConsumer

        def run() -> list[Record]:
            consumer = KafkaConsumer(**self.config, group_id=group,
                                     auto_offset_reset="earliest", enable_auto_commit=False,
                                     fetch_max_wait_ms=100)
            try:
                subscribe_with_metadata(consumer, topic)
                read = self._poll(consumer, count)
                consumer.commit()
                return read
            finally:
                consumer.close()
        return self._run(run)


# -- aiokafka ----------------------------------------------------------------------------------


class AioKafka:
    name = "aiokafka"
    creates_topics = True
    creates_acls = False  # AIOKafkaAdminClient has no ACL calls

    def __init__(self, secure: SaslSsl, user: str, password: str) -> None:
        self._secure, self._user, self._password = secure, user, password
        self._heard = Heard()

    def _run(self, call: Callable[[dict[str, Any]], Awaitable[T]]) -> T:
        """``call`` with the client's keywords in an event loop of its own (aiokafka binds
        its SSLContext and clients to the running loop)."""
        from aiokafka.errors import KafkaError

        async def run() -> T:
            return await call(self._secure.aiokafka(self._user, self._password))
        with heard("aiokafka") as self._heard:
            try:
                return asyncio.run(run())
            except KafkaError as error:
                raise self._heard.refusal(error) from error

    def create_topic(self, topic: str, partitions: int, replicas: int) -> None:
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        async def run(config: dict[str, Any]) -> None:
            admin = AIOKafkaAdminClient(**config)
            await admin.start()
            try:
                response = await admin.create_topics([NewTopic(topic, partitions, replicas)])
            finally:
                await admin.close()
            for name, code, message in response.topic_errors:
                if code:  # aiokafka hands back the response: its errors are ours to read
                    from aiokafka.errors import for_code
                    raise RefusedError(for_code(code).message, f"{name}: {message}")
        self._run(run)

    def create_acl(self, topic: str) -> None:
        raise NotImplementedError("aiokafka's admin client has no ACL calls")

    def topic_partitions(self, topic: str) -> int:
        from aiokafka import AIOKafkaProducer

        async def run(config: dict[str, Any]) -> int:
            producer = AIOKafkaProducer(**config)
            await producer.start()
            try:
                return len(await producer.partitions_for(topic))
            finally:
                await producer.stop()
        return self._run(run)

    def produce(self, topic: str, prefix: str, count: int) -> Placed:
        from aiokafka import AIOKafkaProducer

        async def run(config: dict[str, Any]) -> Placed:
            producer = AIOKafkaProducer(**config, acks="all")
            await producer.start()
            try:
                futures = [await producer.send(topic, key=str(i).encode(), value=value.encode())
                           for i, value in enumerate(values(prefix, count))]
                sent = await asyncio.wait_for(asyncio.gather(*futures), DEADLINE_S)
                return [(m.partition, m.offset) for m in sent]
            finally:
                await producer.stop()
        return self._run(run)

    async def _poll(self, consumer: Any, count: int) -> list[Record]:
        read: list[Record] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(read) < count and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                read += [(r.partition, r.offset, r.value.decode()) for r in records]
            self._heard.unauthorized()
        return read

    def consume(self, topic: str, partitions: int, count: int) -> list[Record]:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        async def run(config: dict[str, Any]) -> list[Record]:
            consumer = AIOKafkaConsumer(**config, group_id=None, enable_auto_commit=False,
                                        auto_offset_reset="earliest", fetch_max_wait_ms=100)
            await consumer.start()
            try:  # from the beginning by the reset policy: seek_to_beginning would wait on
                # a topic it may not describe
                consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
                return await self._poll(consumer, count)
            finally:
                await consumer.stop()
        return self._run(run)

    def group(self, topic: str, group: str, count: int) -> list[Record]:
        from aiokafka import AIOKafkaConsumer

        async def run(config: dict[str, Any]) -> list[Record]:
            consumer = AIOKafkaConsumer(topic, **config, group_id=group,
                                        auto_offset_reset="earliest", enable_auto_commit=False,
                                        fetch_max_wait_ms=100)
            try:
                await consumer.start()
                read = await self._poll(consumer, count)
                await consumer.commit()
                return read
            finally:
                await consumer.stop()
        return self._run(run)


# -- kcat --------------------------------------------------------------------------------------


def librdkafka_version(kcat_version: str) -> tuple[int, ...]:
    """The librdkafka version ``kcat -V`` names."""
    found = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", kcat_version)
    assert found is not None, kcat_version
    return tuple(int(part) for part in found.groups())


def kcat_environment(directory: Path) -> dict[str, str]:
    """kcat's environment: a kcat linked to a librdkafka older than 2.6.1 (Debian 12's
    2.0.2) repeats the client nonce in SCRAM's final message, which Kafka 4 (as pykraft)
    refuses; it then loads the librdkafka of the confluent-kafka wheel, linked from
    ``directory``."""
    said = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=10,
                          check=False).stdout
    if librdkafka_version(said) >= SCRAM_FIXED:
        return dict(os.environ)
    import confluent_kafka

    (bundled,) = (Path(confluent_kafka.__file__).parent.parent / "confluent_kafka.libs").glob(
        "librdkafka*.so*")
    link = directory / "kcat-librdkafka" / "librdkafka.so.1"
    if not link.exists():
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(bundled)
    return {**os.environ, "LD_LIBRARY_PATH": str(link.parent)}


class Kcat:
    name = "kcat"
    creates_topics = False
    creates_acls = False

    def __init__(self, secure: SaslSsl, user: str, password: str) -> None:
        config = secure.librdkafka(user, password)
        self._args = ["-b", config.pop("bootstrap.servers"),
                      *(f"-X{key}={value}" for key, value in config.items())]
        self._environment = kcat_environment(secure.cluster.base)

    def run(self, *args: str, stdin: str = "") -> str:
        done = subprocess.run(["kcat", *self._args, *args], input=stdin, capture_output=True,
                              text=True, timeout=DEADLINE_S * 2, env=self._environment,
                              check=False)
        errors = [line for line in done.stderr.splitlines() if "ERROR" in line
                  or "failed" in line.lower()]
        for words, error in LIBRDKAFKA_ERRORS.items():
            found = [line for line in errors if words in line]
            if found:
                raise RefusedError(error, found[0])
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    def create_topic(self, topic: str, partitions: int, replicas: int) -> None:
        raise NotImplementedError("kcat has no admin calls")

    def create_acl(self, topic: str) -> None:
        raise NotImplementedError("kcat has no admin calls")

    def topic_partitions(self, topic: str) -> int:
        metadata = json.loads(self.run("-L", "-J", "-t", topic))
        (found,) = metadata["topics"]
        return len(found["partitions"])

    def produce(self, topic: str, prefix: str, count: int) -> Placed:
        self.run("-P", "-t", topic, "-K", "\t", "-X", "acks=all", stdin="".join(
            f"{i}\t{value}\n" for i, value in enumerate(values(prefix, count))))
        return None  # kcat does not say where its messages went

    @staticmethod
    def _records(out: str) -> list[Record]:
        return [(r["partition"], r["offset"], r["payload"])
                for r in map(json.loads, out.splitlines())]

    def consume(self, topic: str, partitions: int, count: int) -> list[Record]:
        return self._records(self.run("-C", "-t", topic, "-o", "beginning", "-c", str(count),
                                      "-e", "-J"))

    def group(self, topic: str, group: str, count: int) -> list[Record]:
        """``-G``: the balanced consumer, committing what it read as it closes (its
        auto-commit of the offsets it stored)."""
        return self._records(self.run("-G", group, topic, "-o", "beginning", "-c", str(count),
                                      "-J"))


# -- Apache Kafka's Java client ----------------------------------------------------------------


class Java:
    """java/SecureProbe.java in one JVM kept for the adapter's life (a JVM start costs
    seconds); :meth:`close` ends it."""

    name = "java"
    creates_topics = True
    creates_acls = True
    probe: ClassVar[list[str]] = []  # ``java -cp ... SecureProbe``, set by the test fixture

    def __init__(self, secure: SaslSsl, user: str, password: str) -> None:
        self._log = secure.cluster.base / f"java-{user}-{password}.log"
        with self._log.open("ab") as err:
            self._jvm = subprocess.Popen(
                [*self.probe, secure.bootstrap, str(secure.properties_file(user, password))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)

    def call(self, *words: object) -> str:
        assert self._jvm.stdin is not None and self._jvm.stdout is not None
        self._jvm.stdin.write("\t".join(map(str, words)) + "\n")
        self._jvm.stdin.flush()
        deadline = time.monotonic() + DEADLINE_S * 2
        while not readable(self._jvm.stdout, 1.0):
            if self._jvm.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"SecureProbe gave no answer to {words}; its log:\n"
                                     f"{self._log.read_text()[-3000:]}")
        status, *rest = self._jvm.stdout.readline().rstrip("\n").split("\t")
        if status == "error":
            exception, message = rest
            if exception in JAVA_ERRORS:
                raise RefusedError(JAVA_ERRORS[exception], f"{exception}: {message}")
            raise AssertionError(f"{words}: {exception}: {message}")
        return rest[0] if rest else ""

    def close(self) -> None:
        if self._jvm.stdin is not None:
            self._jvm.stdin.close()
        try:
            self._jvm.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._jvm.kill()
            self._jvm.wait(timeout=10)

    def create_topic(self, topic: str, partitions: int, replicas: int) -> None:
        self.call("createTopic", topic, partitions, replicas)

    def create_acl(self, topic: str) -> None:
        self.call("createAcl", topic)

    def topic_partitions(self, topic: str) -> int:
        return int(self.call("partitions", topic))

    def produce(self, topic: str, prefix: str, count: int) -> Placed:
        placed = self.call("produce", topic, prefix, count).split()
        return [(int(p), int(o)) for p, o in (word.split(":") for word in placed)]

    @staticmethod
    def _records(words: list[str]) -> list[Record]:
        return [(int(p), int(o), v) for p, o, v in (word.split(":", 2) for word in words)]

    def consume(self, topic: str, partitions: int, count: int) -> list[Record]:
        return self._records(self.call("consume", topic, partitions, count).split())

    def group(self, topic: str, group: str, count: int) -> list[Record]:
        return self._records(self.call("group", topic, group, count).split())


CLIENTS: dict[str, type[Confluent | KafkaPython | AioKafka | Kcat | Java]] = {
    c.name: c for c in (Confluent, KafkaPython, AioKafka, Kcat, Java)}
