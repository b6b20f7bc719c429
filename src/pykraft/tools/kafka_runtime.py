"""Apache Kafka's own nodes beside pykraft's in a local cluster (``cluster up --kafka-brokers``).

pykraft does not ship Kafka: it runs the Kafka a user has, a distribution's directory (its
``libs/*.jar``, as ``kafka-run-class.sh`` builds its classpath) given by ``--kafka-home`` or
``KAFKA_HOME``, or the jars ``make kafka`` checked into ``.cache/kafka/<version>/libs`` in a
checkout. A Kafka node is formatted by Kafka's ``kafka.tools.StorageTool`` and runs
``kafka.Kafka`` in a JVM kept light for a laptop by default: a small heap, the serial
collector, C1 only (``kafka-server-start.sh`` gives 1 GiB and G1,
:data:`SERVER_START_JVM_OPTIONS`, which a comparison with Kafka such as ``bench/vs_kafka.py``
passes instead). Its log4j2 configuration, written into the cluster directory, sends INFO and
up to stderr, which lands in the node's ``server.log`` like a pykraft node's.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from pykraft.errors import PyKraftError
from pykraft.features import DEFAULT_METADATA_VERSION

KAFKA_HOME_ENV = "KAFKA_HOME"
KAFKA_MAIN_CLASS = "kafka.Kafka"
STORAGE_TOOL_CLASS = "kafka.tools.StorageTool"
#: what a mixed cluster is formatted at, by both kinds' tools: pykraft's default, where Kafka
#: 4.4's ``version-mapping`` finalizes no other feature either (at its own default, 4.4-IV2,
#: Kafka finalizes transaction/group/ELR/share/streams versions pykraft's brokers do not
#: support, and its controllers refuse their registration, as they refuse any such broker)
MIXED_RELEASE_VERSION = DEFAULT_METADATA_VERSION.name
JVM_OPTIONS = ("-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-Xshare:auto",
               "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
#: ``kafka-run-class.sh``'s ``KAFKA_JVM_PERFORMANCE_OPTS``, for servers and tools alike
KAFKA_JVM_PERFORMANCE_OPTS = ("-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                              "-XX:InitiatingHeapOccupancyPercent=35",
                              "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
                              "-Djava.awt.headless=true")
#: what ``kafka-server-start.sh`` runs a node with: its ``KAFKA_HEAP_OPTS``, then the above
SERVER_START_JVM_OPTIONS = ("-Xmx1G", "-Xms1G", *KAFKA_JVM_PERFORMANCE_OPTS)
LOG4J2_FILE = "kafka-log4j2.properties"
_LOG4J2 = """\
# Kafka nodes of this pykraft local cluster log to stderr, which goes to node-<id>/server.log
rootLogger.level = INFO
rootLogger.appenderRef.stderr.ref = STDERR
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
"""


class KafkaRuntimeError(PyKraftError):
    """No usable Apache Kafka: no Java, or no Kafka jars where they were looked for."""


@dataclass(frozen=True, slots=True)
class KafkaRuntime:
    """Where Kafka's jars are, and how to run its classes (with ``jvm_options``)."""

    home: Path
    jars: tuple[Path, ...]
    jvm_options: tuple[str, ...] = JVM_OPTIONS

    @classmethod
    def locate(cls, home: Path | None,
               jvm_options: tuple[str, ...] = JVM_OPTIONS) -> KafkaRuntime:
        """Kafka in ``home`` (a distribution, or a directory of jars), else ``$KAFKA_HOME``,
        its JVMs run with ``jvm_options``; a KafkaRuntimeError naming what is missing."""
        if home is None:
            from_env = os.environ.get(KAFKA_HOME_ENV)
            if not from_env:
                raise KafkaRuntimeError(
                    "Kafka nodes need Apache Kafka: pass --kafka-home <a Kafka distribution> "
                    f"or set {KAFKA_HOME_ENV} (in a pykraft checkout, `make kafka` puts one "
                    "in .cache/kafka/<version>)")
            home = Path(from_env)
        if shutil.which("java") is None:
            raise KafkaRuntimeError("Kafka nodes need java on the PATH (Java 17 or later)")
        libs = home / "libs" if (home / "libs").is_dir() else home
        jars = tuple(sorted(libs.glob("*.jar")))
        if not any(jar.name.startswith("kafka_") for jar in jars):
            raise KafkaRuntimeError(f"{libs} holds no Kafka server jar (kafka_<scala>-*.jar): "
                                    "--kafka-home must be a Kafka distribution's directory")
        return cls(home.resolve(), tuple(jar.resolve() for jar in jars), jvm_options)

    def java(self, main_class: str, *args: str, log4j2: Path) -> list[str]:
        """The command running one of Kafka's main classes."""
        return ["java", *self.jvm_options, f"-Dlog4j2.configurationFile={log4j2}",
                "-cp", os.pathsep.join(str(jar) for jar in self.jars), main_class, *args]

    def format_command(self, config: Path, cluster_id: str, *mode_args: str,
                       log4j2: Path) -> list[str]:
        """``kafka-storage.sh format`` of one node, at :data:`MIXED_RELEASE_VERSION`."""
        return self.java(STORAGE_TOOL_CLASS, "format", "--config", str(config),
                         "--cluster-id", cluster_id, "--release-version",
                         MIXED_RELEASE_VERSION, *mode_args, log4j2=log4j2)

    def server_command(self, config: Path, *, log4j2: Path) -> list[str]:
        """``kafka-server-start.sh config``."""
        return self.java(KAFKA_MAIN_CLASS, str(config), log4j2=log4j2)


def write_log4j2(directory: Path) -> Path:
    """The Kafka nodes' logging configuration, in the cluster's directory."""
    path = directory / LOG4J2_FILE
    path.write_text(_LOG4J2)
    return path
