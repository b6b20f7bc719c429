"""What both listeners refuse in the ACL APIs' requests before handling them.

Kafka's request classes (CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest) refuse
a body naming the UNKNOWN code (0) of a resource type, pattern type, operation or permission
while it is parsed, on a broker's listener and a controller's alike (Kafka 4.4.0 closes
either): a request that cannot be parsed closes the connection.
"""

from __future__ import annotations

from pykraft.protocol.apis import ApiKey

_UNKNOWN = 0
_FIELDS: dict[int, tuple[str | None, str, tuple[str, ...]]] = {
    ApiKey.CREATE_ACLS: ("creations", "CreatableAcls contain unknown elements",
                         ("resource_type", "resource_pattern_type", "operation",
                          "permission_type")),
    ApiKey.DELETE_ACLS: ("filters", "Filters contain UNKNOWN elements",
                         ("resource_type_filter", "pattern_type_filter", "operation",
                          "permission_type")),
    ApiKey.DESCRIBE_ACLS: (None, "DescribeAclsRequest contains UNKNOWN elements",
                           ("resource_type_filter", "pattern_type_filter", "operation",
                            "permission_type")),
}


def refused_acl_request(api_key: int, body: object) -> str | None:
    """Why Kafka would not parse this ACL request (None for any other API, or a valid one)."""
    spec = _FIELDS.get(api_key)
    if spec is None:
        return None
    parts_field, message, fields = spec
    parts = (body,) if parts_field is None else getattr(body, parts_field)
    if any(getattr(part, name) == _UNKNOWN for part in parts for name in fields):
        return message
    return None
