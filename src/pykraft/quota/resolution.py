"""Which quota holds for a (user, client id), and which clients share its rate: Kafka's
``DefaultQuotaCallback`` over the image's client quotas.

A client's rate is kept per *metric tags*, a (user, client id) pair with either side blank
when the quotas in force do not tell clients apart by it: while only client-id quotas were
ever set, every client id has its rate (whatever its user), while only user quotas, every
user, and so on; with quotas at several levels the tags follow the most specific entity
defined, in Kafka's order of precedence:

1. /users/U/clients/C   2. /users/U/clients/<default>   3. /users/U
4. /users/<default>/clients/C   5. /users/<default>/clients/<default>   6. /users/<default>
7. /clients/C   8. /clients/<default>

The quota of given tags is then looked up among the entities of their shape only: tags with
both sides among 1, 2, 4, 5; a user's among 3, 6; a client id's among 7, 8. The levels that
ever held a quota since the process started count (Kafka's ``quotaTypesEnabled`` only grows),
so removing the last user quota keeps tagging rates by user until a restart, as in Kafka.
Kafka 4 has no static defaults (``quota.producer.default`` is gone): no entity, no quota.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from pykraft.image.client_quotas import CLIENT_ID, USER, QuotaEntity

#: (user, client id) of a rate; "" for a side the rate does not tell apart.
Tags = tuple[str, str]


class Level(enum.Flag):
    """The entity shapes that ever held a quota of one key (Kafka's ``QuotaTypes``)."""

    NONE = 0
    CLIENT_ID = 1
    USER = 2
    USER_CLIENT_ID = 4


def _both(user: str | None, client_id: str | None) -> QuotaEntity:
    """/users/U/clients/C as the image keys it (None: the default entity)."""
    return (CLIENT_ID, client_id), (USER, user)


def _user(user: str | None) -> QuotaEntity:
    return ((USER, user),)


def _client(client_id: str | None) -> QuotaEntity:
    return ((CLIENT_ID, client_id),)


def level_of(entity: QuotaEntity) -> Level:
    """The shape of an image entity (an ip entity has none)."""
    kinds = {kind for kind, _ in entity}
    if kinds == {USER, CLIENT_ID}:
        return Level.USER_CLIENT_ID
    if kinds == {USER}:
        return Level.USER
    return Level.CLIENT_ID if kinds == {CLIENT_ID} else Level.NONE


#: Levels' value -> whether the tags keep the user, the client id (Kafka's shortcut when
#: quotas were only ever set at one level).
_ONE_LEVEL = {Level.NONE.value: (False, True), Level.CLIENT_ID.value: (False, True),
              Level.USER.value: (True, False), Level.USER_CLIENT_ID.value: (True, True)}


class QuotaResolver:
    """The quotas of one key (``producer_byte_rate``, ...) by entity, and the levels
    enabled: :meth:`tags` and :meth:`limit` are Kafka's ``quotaMetricTags`` and
    ``quotaLimit``."""

    def __init__(self, quotas: Mapping[QuotaEntity, float], levels: Level) -> None:
        self.quotas = quotas
        self.levels = levels

    def tags(self, user: str, client_id: str) -> Tags:
        single = _ONE_LEVEL.get(self.levels.value)
        if single is not None:  # quotas at one level only: tags without looking up
            by_user, by_client = single
            return user if by_user else "", client_id if by_client else ""
        cascade: tuple[tuple[QuotaEntity, Tags], ...] = (
            (_both(user, client_id), (user, client_id)),
            (_both(user, None), (user, client_id)),
            (_user(user), (user, "")),
            (_both(None, client_id), (user, client_id)),
            (_both(None, None), (user, client_id)),
            (_user(None), (user, "")))
        return next((tags for entity, tags in cascade if entity in self.quotas),
                    ("", client_id))

    def limit(self, tags: Tags) -> float | None:
        """The quota of the rate with ``tags``; None when no entity sets one."""
        user, client_id = tags
        candidates: tuple[QuotaEntity, ...]
        if user and client_id:
            candidates = (_both(user, client_id), _both(user, None),
                          _both(None, client_id), _both(None, None))
        elif user:
            candidates = (_user(user), _user(None))
        elif client_id:
            candidates = (_client(client_id), _client(None))
        else:
            return None
        return next((self.quotas[entity] for entity in candidates if entity in self.quotas),
                    None)
