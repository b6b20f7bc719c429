"""The controller's listener closes the connection on an ACL request naming an UNKNOWN
code, as Kafka 4.4.0's controller does (its request classes cannot parse it), before the
controller sees it: a 1 MiB CreateAcls of 80,000 such creations was handled whole."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from pykraft.controller import ControllerConfig
from pykraft.controller.activation import DEFAULT_BOOTSTRAP
from pykraft.image.acls import AclOperation, AclPermissionType, PatternType, ResourceType
from pykraft.messages.kafka.create_acls_request import AclCreation, CreateAclsRequest
from pykraft.messages.kafka.delete_acls_request import DeleteAclsFilter, DeleteAclsRequest
from pykraft.protocol.codec import api_key_of, encode_request
from pykraft.protocol.header import RequestHeader
from pykraft.runtime.controller_service import ControllerService
from pykraft.runtime.dispatch import Dispatcher
from pykraft.runtime.listener_dispatch import CloseConnection
from pykraft.security.session import anonymous

UNKNOWN = 0
CLIENT = anonymous("127.0.0.1:5000")


def _creation(resource_type: int) -> AclCreation:
    return AclCreation(resource_type=resource_type, resource_name="t",
                       resource_pattern_type=PatternType.LITERAL, principal="User:a",
                       host="*", operation=AclOperation.READ,
                       permission_type=AclPermissionType.ALLOW)


def _filter(operation: int) -> DeleteAclsFilter:
    return DeleteAclsFilter(resource_type_filter=ResourceType.ANY,
                            resource_name_filter=None, pattern_type_filter=PatternType.ANY,
                            principal_filter=None, host_filter=None, operation=operation,
                            permission_type=AclPermissionType.ANY)


@pytest.mark.parametrize(("body", "reason"), [
    (CreateAclsRequest(creations=(_creation(ResourceType.TOPIC), _creation(UNKNOWN))),
     "CreatableAcls contain unknown elements"),
    (DeleteAclsRequest(filters=(_filter(AclOperation.ANY), _filter(UNKNOWN))),
     "Filters contain UNKNOWN elements"),
])
def test_an_unknown_code_closes_the_controllers_connection(body: Any, reason: str) -> None:
    node = SimpleNamespace(settings=SimpleNamespace(
        node_id=1, controller=SimpleNamespace(properties={})))
    service = ControllerService(ControllerConfig(node_id=1), bootstrap=DEFAULT_BOOTSTRAP)
    dispatcher = Dispatcher(node, service)  # type: ignore[arg-type]
    frame = encode_request(RequestHeader(api_key_of(body), 3, 7, "test"), body)
    with pytest.raises(CloseConnection, match=reason):
        asyncio.run(dispatcher.handle(frame, CLIENT))
