"""Settings and the controller listener of a dynamic (KIP-853) quorum node."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pykraft.config.server import ServerConfig
from pykraft.errors import ConfigError
from pykraft.messages.kafka import api_versions_request as av_request
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.header import RequestHeader
from pykraft.raft import rpc
from pykraft.records.control import VoterEndpoint
from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.node import RaftNode
from pykraft.runtime.settings import NodeSettings, bootstrap_destination, load_settings
from pykraft.security.session import anonymous
from pykraft.storage.meta_properties import read_meta_properties
from pykraft.tools.local_cluster import LocalCluster


def _cluster(base: Path, properties: dict[str, str] | None = None) -> LocalCluster:
    """Three controllers: 1 formatted --standalone, 2 and 3 --no-initial-controllers."""
    return LocalCluster.create(base, 3, properties, dynamic=True)


def _settings(cluster: LocalCluster, node_id: int,
              overrides: dict[str, str] | None = None) -> NodeSettings:
    return load_settings(ServerConfig.load(cluster.nodes[node_id].config, overrides))


def test_bootstrap_servers_make_a_dynamic_quorum(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, {"controller.quorum.auto.join.enable": "true"})
    settings = _settings(cluster, 2)
    addresses = tuple(("127.0.0.1", cluster.nodes[i].port) for i in (1, 2, 3))
    assert settings.is_dynamic and settings.voters == ()
    assert settings.bootstrap_servers == addresses
    assert settings.quorum.voters == frozenset()
    assert settings.quorum.bootstrap_servers == (-1, -2, -3)
    assert [settings.bootstrap_address(bootstrap_destination(i)) for i in range(3)] == list(
        addresses)
    assert settings.bootstrap_address(-4) is None and settings.bootstrap_address(1) is None
    assert settings.quorum.local_listeners == (
        VoterEndpoint("CONTROLLER", "127.0.0.1", cluster.nodes[2].port),)
    assert settings.quorum.auto_join
    meta = read_meta_properties(cluster.nodes[2].data / "meta.properties")
    assert settings.directory_id is not None and settings.directory_id == meta.directory_id


def test_advertised_listener_is_what_the_voter_set_gets(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path)
    settings = _settings(cluster, 1, {"advertised.listeners": "CONTROLLER://ctl-1.example:19093"})
    assert settings.quorum.local_listeners == (
        VoterEndpoint("CONTROLLER", "ctl-1.example", 19093),)
    assert settings.listener.port == cluster.nodes[1].port  # still binds its own listener


def test_static_voters_win_and_keep_their_checks(tmp_path: Path) -> None:
    cluster = LocalCluster.create(tmp_path, 3)
    settings = _settings(cluster, 1, {"controller.quorum.bootstrap.servers": "127.0.0.1:1"})
    assert not settings.is_dynamic and settings.bootstrap_servers == ()
    assert settings.quorum.voters == frozenset({1, 2, 3})
    assert settings.quorum.bootstrap_servers == ()


@pytest.mark.parametrize(("overrides", "message"), [
    ({"controller.quorum.bootstrap.servers": ""},
     "either controller.quorum.bootstrap.servers must contain the set of bootstrap "
     "controllers or controller.quorum.voters"),
    ({"controller.quorum.bootstrap.servers": "127.0.0.1"},
     "invalid value '127.0.0.1' for controller.quorum.bootstrap.servers"),
    ({"controller.quorum.bootstrap.servers": "127.0.0.1:9093,:9094"},
     "invalid value ':9094' for controller.quorum.bootstrap.servers: the host is missing"),
    ({"controller.quorum.bootstrap.servers": "127.0.0.1:99999"},
     "invalid port 99999 in controller.quorum.bootstrap.servers"),
    ({"controller.quorum.auto.join.enable": "maybe"},  # Kafka's ConfigDef words
     "Invalid value maybe for configuration controller.quorum.auto.join.enable: Expected "
     "value to be either true or false"),
    ({"metadata.log.max.record.bytes.between.snapshots": "0"},
     "metadata.log.max.record.bytes.between.snapshots"),
])
def test_bad_quorum_settings_name_the_key(tmp_path: Path, overrides: dict[str, str],
                                          message: str) -> None:
    cluster = _cluster(tmp_path)
    with pytest.raises(ConfigError, match=message):
        _settings(cluster, 2, overrides)


def test_snapshot_thresholds_reach_the_state_machines(tmp_path: Path) -> None:
    cluster = _cluster(tmp_path, {"metadata.log.max.record.bytes.between.snapshots": "4096",
                                  "metadata.log.max.snapshot.interval.ms": "0"})
    policy = _settings(cluster, 1).controller.snapshot_policy()
    assert (policy.max_bytes_between, policy.max_interval_ms) == (4096, 0)


def test_controller_api_versions_name_kraft_version(tmp_path: Path) -> None:
    """The new-voter probe reads the supported range; the finalized level is the log's
    (1 after --standalone formatting)."""
    cluster = _cluster(tmp_path)

    async def scenario() -> rpc.ApiVersionsResponse:
        node = RaftNode(_settings(cluster, 1))
        try:
            frame = encode_request(RequestHeader(ApiKey.API_VERSIONS, 4, 9, "t"),
                                   av_request.ApiVersionsRequest(
                                       client_software_name="t", client_software_version="1"))
            answer = await Dispatcher(node).handle(frame, anonymous("127.0.0.1:5000"))
        finally:
            node.disk_log.close()
        body: rpc.ApiVersionsResponse = decode_response(ApiKey.API_VERSIONS, 4, answer).body
        return body

    body = asyncio.run(scenario())
    assert rpc.supported_kraft_versions(body) == (0, 1)
    assert [(f.name, int(f.min_version_level), int(f.max_version_level))
            for f in body.finalized_features] == [("kraft.version", 1, 1)]
    served = {int(k.api_key) for k in body.api_keys}
    assert {ApiKey.FETCH_SNAPSHOT, ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER,
            ApiKey.UPDATE_RAFT_VOTER} <= served
