"""The options that put Apache Kafka's own nodes in a local cluster, shared by
``cluster up`` and ``chaos run`` (:mod:`pykraft.tools.kafka_runtime`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

KafkaBrokersOption = Annotated[int, typer.Option(
    min=0, help="Apache Kafka brokers beside pykraft's (ids after them).")]
KafkaControllersOption = Annotated[int, typer.Option(
    min=0, help="Apache Kafka controllers beside pykraft's in the quorum.")]
KafkaHomeOption = Annotated[Path | None, typer.Option(
    envvar="KAFKA_HOME", help="The Apache Kafka that runs the Kafka nodes: a distribution's "
    "directory (its libs/*.jar); in a checkout, `make kafka` fetches one into "
    ".cache/kafka/<version>.")]
