"""A broker registers every client listener it advertises, each with its security protocol
id, as Kafka's BrokerRegistration lists them."""

from __future__ import annotations

import uuid
from typing import cast

from pykraft.broker.lifecycle import BrokerIdentity, BrokerLifecycle
from pykraft.broker.metadata_listener import BrokerMetadataListener
from pykraft.config.server import Endpoint
from pykraft.runtime.controller_channel import ControllerChannel
from pykraft.security.session import SecurityProtocol


def test_every_advertised_listener_is_registered_with_its_protocol() -> None:
    identity = BrokerIdentity(
        broker_id=1, cluster_id="c", rack=None, log_dirs=(uuid.UUID(int=1),),
        heartbeat_interval_ms=1000, endpoints=(
            (Endpoint("PLAINTEXT", "127.0.0.1", 9092), SecurityProtocol.PLAINTEXT),
            (Endpoint("EXTERNAL", "broker.example", 9093), SecurityProtocol.SSL),
            (Endpoint("CLIENTS", "broker.example", 9094), SecurityProtocol.SASL_SSL)))
    lifecycle = BrokerLifecycle(identity, cast(ControllerChannel, None),
                                cast(BrokerMetadataListener, None))
    listeners = lifecycle.registration().listeners
    assert [(str(e.name), str(e.host), int(e.port), int(e.security_protocol))
            for e in listeners] == [("PLAINTEXT", "127.0.0.1", 9092, 0),
                                    ("EXTERNAL", "broker.example", 9093, 1),
                                    ("CLIENTS", "broker.example", 9094, 3)]
