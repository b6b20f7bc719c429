"""Response building shared by the controller: the same error for every part of a request
(NOT_CONTROLLER when inactive or after losing leadership), every other field at the
schema's default (a throttle time of 0 among them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pykraft.controller.delegation_token_control import TokenRequest
from pykraft.messages.kafka import allocate_producer_ids_request as allocate_req
from pykraft.messages.kafka import allocate_producer_ids_response as allocate_resp
from pykraft.messages.kafka import alter_client_quotas_request as quotas_req
from pykraft.messages.kafka import alter_client_quotas_response as quotas_resp
from pykraft.messages.kafka import alter_configs_request as alter_req
from pykraft.messages.kafka import alter_configs_response as alter_resp
from pykraft.messages.kafka import alter_partition_reassignments_request as apr_req
from pykraft.messages.kafka import alter_partition_reassignments_response as apr_resp
from pykraft.messages.kafka import alter_partition_request as ap_req
from pykraft.messages.kafka import alter_partition_response as ap_resp
from pykraft.messages.kafka import alter_user_scram_credentials_request as scram_req
from pykraft.messages.kafka import alter_user_scram_credentials_response as scram_resp
from pykraft.messages.kafka import assign_replicas_to_dirs_request as ard_req
from pykraft.messages.kafka import assign_replicas_to_dirs_response as ard_resp
from pykraft.messages.kafka import broker_heartbeat_request as hb_req
from pykraft.messages.kafka import broker_heartbeat_response as hb_resp
from pykraft.messages.kafka import broker_registration_request as reg_req
from pykraft.messages.kafka import broker_registration_response as reg_resp
from pykraft.messages.kafka import controller_registration_request as creg_req
from pykraft.messages.kafka import controller_registration_response as creg_resp
from pykraft.messages.kafka import create_acls_request as cacl_req
from pykraft.messages.kafka import create_acls_response as cacl_resp
from pykraft.messages.kafka import create_delegation_token_request as cdt_req
from pykraft.messages.kafka import create_delegation_token_response as cdt_resp
from pykraft.messages.kafka import create_partitions_request as cp_req
from pykraft.messages.kafka import create_partitions_response as cp_resp
from pykraft.messages.kafka import create_topics_request as ct_req
from pykraft.messages.kafka import create_topics_response as ct_resp
from pykraft.messages.kafka import delete_acls_request as dacl_req
from pykraft.messages.kafka import delete_acls_response as dacl_resp
from pykraft.messages.kafka import delete_topics_request as dt_req
from pykraft.messages.kafka import delete_topics_response as dt_resp
from pykraft.messages.kafka import describe_acls_request as descacl_req
from pykraft.messages.kafka import describe_acls_response as descacl_resp
from pykraft.messages.kafka import describe_configs_request as dc_req
from pykraft.messages.kafka import describe_configs_response as dc_resp
from pykraft.messages.kafka import elect_leaders_request as el_req
from pykraft.messages.kafka import elect_leaders_response as el_resp
from pykraft.messages.kafka import expire_delegation_token_request as edt_req
from pykraft.messages.kafka import expire_delegation_token_response as edt_resp
from pykraft.messages.kafka import incremental_alter_configs_request as iac_req
from pykraft.messages.kafka import incremental_alter_configs_response as iac_resp
from pykraft.messages.kafka import list_partition_reassignments_request as lpr_req
from pykraft.messages.kafka import list_partition_reassignments_response as lpr_resp
from pykraft.messages.kafka import renew_delegation_token_request as rdt_req
from pykraft.messages.kafka import renew_delegation_token_response as rdt_resp
from pykraft.messages.kafka import unregister_broker_request as unreg_req
from pykraft.messages.kafka import unregister_broker_response as unreg_resp
from pykraft.messages.kafka import update_features_request as uf_req
from pykraft.messages.kafka import update_features_response as uf_resp
from pykraft.protocol.errors import ErrorCode

_Builder = Callable[[Any, ErrorCode, str | None], object]


def _create_topics(req: ct_req.CreateTopicsRequest, code: ErrorCode,
                   message: str | None) -> object:
    return ct_resp.CreateTopicsResponse(topics=tuple(
        ct_resp.CreatableTopicResult(name=t.name, error_code=code, error_message=message)
        for t in req.topics))


def delete_topic_states(req: dt_req.DeleteTopicsRequest) -> tuple[dt_req.DeleteTopicState, ...]:
    """The topics a DeleteTopics request names, whatever its version: v6's ``topics`` (by
    name or id), or v1-5's ``topic_names`` as named entries (one class holds both; the
    request's version filled one of them, as in Kafka's ControllerApis)."""
    return req.topics + tuple(dt_req.DeleteTopicState(name=name) for name in req.topic_names)


def _delete_topics(req: dt_req.DeleteTopicsRequest, code: ErrorCode,
                   message: str | None) -> object:
    return dt_resp.DeleteTopicsResponse(responses=tuple(
        dt_resp.DeletableTopicResult(name=t.name, topic_id=t.topic_id, error_code=code,
                                     error_message=message)
        for t in delete_topic_states(req)))


def _create_partitions(req: cp_req.CreatePartitionsRequest, code: ErrorCode,
                       message: str | None) -> object:
    return cp_resp.CreatePartitionsResponse(results=tuple(
        cp_resp.CreatePartitionsTopicResult(name=t.name, error_code=code, error_message=message)
        for t in req.topics))


def _describe_configs(req: dc_req.DescribeConfigsRequest, code: ErrorCode,
                      message: str | None) -> object:
    return dc_resp.DescribeConfigsResponse(results=tuple(
        dc_resp.DescribeConfigsResult(error_code=code, error_message=message,
                                      resource_type=r.resource_type,
                                      resource_name=r.resource_name)
        for r in req.resources))


def _incremental(req: iac_req.IncrementalAlterConfigsRequest, code: ErrorCode,
                 message: str | None) -> object:
    return iac_resp.IncrementalAlterConfigsResponse(responses=tuple(
        iac_resp.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                              resource_type=r.resource_type,
                                              resource_name=r.resource_name)
        for r in req.resources))


def _alter_configs(req: alter_req.AlterConfigsRequest, code: ErrorCode,
                   message: str | None) -> object:
    return alter_resp.AlterConfigsResponse(responses=tuple(
        alter_resp.AlterConfigsResourceResponse(error_code=code, error_message=message,
                                                resource_type=r.resource_type,
                                                resource_name=r.resource_name)
        for r in req.resources))


def _create_acls(req: cacl_req.CreateAclsRequest, code: ErrorCode,
                 message: str | None) -> object:
    # one immutable answer, repeated: cheap for the 80,000 creations a 1 MiB request holds
    return cacl_resp.CreateAclsResponse(results=(
        cacl_resp.AclCreationResult(error_code=code, error_message=message),)
        * len(req.creations))


def _delete_acls(req: dacl_req.DeleteAclsRequest, code: ErrorCode,
                 message: str | None) -> object:
    return dacl_resp.DeleteAclsResponse(filter_results=(
        dacl_resp.DeleteAclsFilterResult(error_code=code, error_message=message),)
        * len(req.filters))


def _alter_scram(req: scram_req.AlterUserScramCredentialsRequest, code: ErrorCode,
                 message: str | None) -> object:
    """Kafka's getErrorResponse: every user named, once, sorted."""
    users = sorted({d.name for d in req.deletions} | {u.name for u in req.upsertions})
    return scram_resp.AlterUserScramCredentialsResponse(results=tuple(
        scram_resp.AlterUserScramCredentialsResult(user=user, error_code=code,
                                                   error_message=message)
        for user in users))


def _elect_leaders(req: el_req.ElectLeadersRequest, code: ErrorCode,
                   message: str | None) -> object:
    """Kafka's getErrorResponse: the code on top and on every partition named (none when
    the request named none)."""
    return el_resp.ElectLeadersResponse(error_code=code, replica_election_results=tuple(
        el_resp.ReplicaElectionResult(topic=t.topic, partition_result=tuple(
            el_resp.PartitionResult(partition_id=p, error_code=code, error_message=message)
            for p in t.partitions))
        for t in req.topic_partitions or ()))


def _alter_quotas(req: quotas_req.AlterClientQuotasRequest, code: ErrorCode,
                  message: str | None) -> object:
    """Kafka's getErrorResponse: every entry, its entity as the request listed it."""
    return quotas_resp.AlterClientQuotasResponse(entries=tuple(
        quotas_resp.EntryData(error_code=code, error_message=message, entity=tuple(
            quotas_resp.EntityData(entity_type=e.entity_type, entity_name=e.entity_name)
            for e in entry.entity))
        for entry in req.entries))


def _alter_reassignments(req: apr_req.AlterPartitionReassignmentsRequest, code: ErrorCode,
                         message: str | None) -> object:
    """Kafka's getErrorResponse: the code on top and on every partition named."""
    return apr_resp.AlterPartitionReassignmentsResponse(
        error_code=code, error_message=message, responses=tuple(
            apr_resp.ReassignableTopicResponse(name=t.name, partitions=tuple(
                apr_resp.ReassignablePartitionResponse(
                    partition_index=p.partition_index, error_code=code, error_message=message)
                for p in t.partitions))
            for t in req.topics))


def _list_reassignments(req: lpr_req.ListPartitionReassignmentsRequest, code: ErrorCode,
                        message: str | None) -> object:
    """Kafka's getErrorResponse: the code on top, every partition named listed bare."""
    return lpr_resp.ListPartitionReassignmentsResponse(
        error_code=code, error_message=message, topics=tuple(
            lpr_resp.OngoingTopicReassignment(name=t.name, partitions=tuple(
                lpr_resp.OngoingPartitionReassignment(partition_index=i)
                for i in t.partition_indexes))
            for t in req.topics or ()))


def _create_token(_request: cdt_req.CreateDelegationTokenRequest, code: ErrorCode,
                  _message: str | None) -> object:
    """Kafka's ``CreateDelegationTokenResponse.prepareResponse`` for a refusal: owner and
    requester ``User:ANONYMOUS``, every timestamp -1, no token."""
    return cdt_resp.CreateDelegationTokenResponse(
        error_code=code, principal_type="User", principal_name="ANONYMOUS",
        token_requester_principal_type="User", token_requester_principal_name="ANONYMOUS",
        issue_timestamp_ms=-1, expiry_timestamp_ms=-1, max_timestamp_ms=-1)


def _top_level(response: type) -> _Builder:
    """Kafka's ``getErrorResponse`` of a request without parts, as a generated class: the
    code, the message where the response has one, every other field at the schema's
    default (a broker epoch of -1, fenced, no producer ids)."""
    has_message = any(f.name == "error_message" for f in dataclasses.fields(response))

    def build(_request: object, code: ErrorCode, message: str | None) -> object:
        return response(error_code=code, **({"error_message": message} if has_message else {}))
    return build


_BUILDERS: dict[type, _Builder] = {
    reg_req.BrokerRegistrationRequest: _top_level(reg_resp.BrokerRegistrationResponse),
    hb_req.BrokerHeartbeatRequest: _top_level(hb_resp.BrokerHeartbeatResponse),
    unreg_req.UnregisterBrokerRequest: _top_level(unreg_resp.UnregisterBrokerResponse),
    creg_req.ControllerRegistrationRequest: _top_level(
        creg_resp.ControllerRegistrationResponse),
    ap_req.AlterPartitionRequest: _top_level(ap_resp.AlterPartitionResponse),
    ard_req.AssignReplicasToDirsRequest: _top_level(ard_resp.AssignReplicasToDirsResponse),
    uf_req.UpdateFeaturesRequest: _top_level(uf_resp.UpdateFeaturesResponse),
    allocate_req.AllocateProducerIdsRequest: _top_level(
        allocate_resp.AllocateProducerIdsResponse),
    ct_req.CreateTopicsRequest: _create_topics,
    dt_req.DeleteTopicsRequest: _delete_topics,
    cp_req.CreatePartitionsRequest: _create_partitions,
    dc_req.DescribeConfigsRequest: _describe_configs,
    iac_req.IncrementalAlterConfigsRequest: _incremental,
    alter_req.AlterConfigsRequest: _alter_configs,
    scram_req.AlterUserScramCredentialsRequest: _alter_scram,
    el_req.ElectLeadersRequest: _elect_leaders,
    apr_req.AlterPartitionReassignmentsRequest: _alter_reassignments,
    lpr_req.ListPartitionReassignmentsRequest: _list_reassignments,
    cacl_req.CreateAclsRequest: _create_acls,
    dacl_req.DeleteAclsRequest: _delete_acls,
    quotas_req.AlterClientQuotasRequest: _alter_quotas,
    descacl_req.DescribeAclsRequest: lambda _r, c, m: descacl_resp.DescribeAclsResponse(
        error_code=c, error_message=m),
    cdt_req.CreateDelegationTokenRequest: _create_token,
    rdt_req.RenewDelegationTokenRequest: _top_level(rdt_resp.RenewDelegationTokenResponse),
    edt_req.ExpireDelegationTokenRequest: _top_level(edt_resp.ExpireDelegationTokenResponse),
}


def error_response(request: object, code: ErrorCode, message: str | None = None) -> object:
    """The response to ``request`` (or to the body of a token request, which carries its
    principal) with ``code`` on every part of it."""
    if isinstance(request, TokenRequest):
        request = request.body
    builder = _BUILDERS.get(type(request))
    if builder is None:
        raise TypeError(f"the controller does not handle {type(request).__name__}")
    return builder(request, code, message)


def topic_deletion_disabled(request: dt_req.DeleteTopicsRequest) -> object:
    """Kafka's ControllerApis with ``delete.topic.enable=false``: every topic refused,
    without a message, before the controller looks at any of them (INVALID_REQUEST below
    v3: :mod:`pykraft.protocol.version_fit`)."""
    return _delete_topics(request, ErrorCode.TOPIC_DELETION_DISABLED, None)


def error_codes(response: object) -> list[ErrorCode]:
    """The error codes of a response: its top-level one, else those of its parts (the
    shapes :func:`error_response` builds)."""
    top = getattr(response, "error_code", None)
    if top is not None:
        return [top]
    if not dataclasses.is_dataclass(response):
        return []
    codes: list[ErrorCode] = []
    for field in dataclasses.fields(response):
        value = getattr(response, field.name)
        if isinstance(value, tuple):
            codes.extend(part.error_code for part in value if hasattr(part, "error_code"))
    return codes


def is_not_controller(response: object) -> bool:
    """Every part was refused with NOT_CONTROLLER: nothing was done, another controller
    may take the same request."""
    codes = error_codes(response)
    return bool(codes) and all(code == ErrorCode.NOT_CONTROLLER for code in codes)
