"""The config, client quota, SCRAM and producer id writes of the migration (Kafka's
``handleConfigsSnapshot``/``Delta``, ``handleClientQuotasSnapshot``/``Delta``, the producer
id's, and ``ZkConfigMigrationClient``): ``/config/<type>/<name>`` znodes set or created,
each followed by a config change notification, and ``/latest_producer_id_block``."""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pykraft.image.client_quotas import (
    CLIENT_ID,
    IP,
    IP_QUOTAS,
    USER,
    USER_CLIENT_QUOTAS,
    QuotaEntity,
    QuotaType,
    entity_hash,
)
from pykraft.image.configs import ConfigResource, ConfigResourceType
from pykraft.image.image import MetadataDelta, MetadataImage
from pykraft.image.producer_ids import NO_PRODUCER_IDS
from pykraft.image.scram import ScramImage, ScramMechanism
from pykraft.java import java_double_text, java_hash_order, java_string_hash
from pykraft.migration.load import DYNAMIC_PASSWORD_CONFIGS
from pykraft.migration.password_encoder import (
    CBC,
    DEFAULT_ITERATIONS,
    DEFAULT_KEY_FACTORY,
    DEFAULT_KEY_LENGTH,
    decode_password,
    encode_password,
)
from pykraft.migration.zk_ops import CreateOp, DeleteOp, SetDataOp, ZkError
from pykraft.migration.zk_topic_writes import TopicsSync, deleted_topics
from pykraft.migration.zk_tree import DEFAULT_ENTITY, ZkTree, desanitize
from pykraft.migration.zk_write import (
    ANY_RESULT,
    DELETE_BROKER_CONFIG,
    DELETE_CONFIG,
    DELETE_TOPIC_CONFIG,
    UPDATE_BROKER_CONFIG,
    UPDATE_CLIENT_QUOTA,
    UPDATE_CONFIG,
    UPDATE_PRODUCER_ID,
    UPDATE_TOPIC_CONFIG,
    Notification,
    ZkWrite,
    ZkWriteError,
    config_path,
)
from pykraft.migration.znodes import ConfigChangeZNode, ConfigEntityZNode, ProducerIdBlockZNode

PRODUCER_ID_BLOCK_SIZE = 1000
"""``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``: dual write stores the block after KRaft's."""
CONFIG_CHANGES = "/config/changes"
_CONFIG_CHANGE = f"{CONFIG_CHANGES}/config_change_"
_QUOTA_EPSILON = 1e-6
_SCRAM_KEYS = frozenset(m.mechanism_name for m in ScramMechanism if m is not ScramMechanism.UNKNOWN)
_WRITABLE_CONFIGS = {ConfigResourceType.BROKER: "brokers", ConfigResourceType.TOPIC: "topics"}

PasswordEncoder = Callable[[str], str]
PasswordDecoder = Callable[[str], str]


@dataclass(frozen=True, slots=True)
class Passwords:
    """``password.encoder.secret``'s codec for password broker configs (stored encoded)."""

    encode: PasswordEncoder
    decode: PasswordDecoder

    @classmethod
    def with_secret(cls, secret: str, random_bytes: Callable[[int], bytes], *,
                    key_factory: str = DEFAULT_KEY_FACTORY, cipher: str = CBC,
                    key_length: int = DEFAULT_KEY_LENGTH,
                    iterations: int = DEFAULT_ITERATIONS) -> Passwords:
        """Kafka's encoder of the ``password.encoder.*`` configs; ``random_bytes`` a CSPRNG
        (``secrets.token_bytes``)."""
        return cls(functools.partial(encode_password, secret=secret, random_bytes=random_bytes,
                                     key_factory=key_factory, cipher=cipher,
                                     key_length=key_length, iterations=iterations),
                   functools.partial(decode_password, secret=secret))


def _config_change(entity_path: str) -> Notification:
    return Notification(CreateOp(_CONFIG_CHANGE, ConfigChangeZNode(entity_path).encode(),
                                 sequential=True), ensure_parent=True)


def _entity_write(kind: str, description: str, entity_type: str, name: str,
                  config: ConfigEntityZNode, parent: str) -> ZkWrite:
    """``tryWriteEntityConfig``: set, or on NONODE create ``parent`` then the znode; a
    config change notification after either."""
    path = config_path(entity_type, name)
    notification = _config_change(f"{entity_type}/{name}")
    create = ZkWrite(kind, description, (CreateOp(path, config.encode()),),
                     parents=(parent,), notification=notification)
    return ZkWrite(kind, description, (SetDataOp(path, config.encode()),),
                   create_instead=create, notification=notification)


def _is_password(key: str) -> bool:
    """``DynamicBrokerConfig.isPasswordConfig``."""
    return any(key.endswith(name) for name in DYNAMIC_PASSWORD_CONFIGS)


def _password_codec(passwords: Passwords | None, key: str) -> Passwords:
    if passwords is None:
        raise ZkWriteError(f"config {key} is a password: ZooKeeper keeps it encoded with "
                           "password.encoder.secret, which is not set")
    return passwords


def write_configs(kind: str, resource: ConfigResource, configs: Mapping[str, str],
                  passwords: Passwords | None = None) -> ZkWrite:
    """``writeConfigs``: the resource's whole config (passwords encoded); only BROKER and
    TOPIC resources live in ZooKeeper (Kafka logs the others and writes nothing)."""
    resource_type, name = resource
    entity_type = _WRITABLE_CONFIGS.get(ConfigResourceType(resource_type))
    description = f"Updated configs for {resource}"
    if entity_type is None:
        return ZkWrite(kind, description, ())
    plain = {key: _password_codec(passwords, key).encode(value) if _is_password(key) else value
             for key, value in configs.items()}
    return _entity_write(kind, description, entity_type, name or DEFAULT_ENTITY,
                         ConfigEntityZNode.of(plain), f"/config/{entity_type}")


def delete_configs(kind: str, resource: ConfigResource) -> ZkWrite:
    """``deleteConfigs``: NONODE is fine (the topic's deletion took it), else a notification."""
    resource_type, name = resource
    entity_type = _WRITABLE_CONFIGS.get(ConfigResourceType(resource_type))
    description = f"Deleted configs for {resource}"
    if entity_type is None:
        return ZkWrite(kind, description, ())
    zk_name = name or DEFAULT_ENTITY
    return ZkWrite(kind, description, (DeleteOp(config_path(entity_type, zk_name)),),
                   already_done=frozenset({ZkError.NO_NODE}),
                   notification=_config_change(f"{entity_type}/{zk_name}"))


def configs_sync(configs: Mapping[ConfigResource, Mapping[str, str]], tree: ZkTree,
                 topics: TopicsSync, passwords: Passwords | None) -> list[ZkWrite]:
    """``handleConfigsSnapshot``; ZooKeeper's topic configs as the topic writes left them
    (Kafka reads them after running those)."""
    for resource_type, _ in configs:
        if resource_type not in _WRITABLE_CONFIGS:
            raise ZkWriteError(f"Unknown config resource type {resource_type}")
    in_zk: dict[ConfigResource, Mapping[str, str]] = {}
    for entity in tree.broker_configs:
        name = "" if entity.name == DEFAULT_ENTITY else entity.name
        in_zk[ConfigResourceType.BROKER, name] = _decoded(entity.config, passwords)
    gone = set(topics.deleted)
    for zk_topic in tree.topics:
        if zk_topic.config is not None and zk_topic.name not in gone:
            in_zk[ConfigResourceType.TOPIC, zk_topic.name] = _decoded(zk_topic.config, passwords)
    for name in topics.created:
        in_zk[ConfigResourceType.TOPIC, name] = {}
    writes = []
    for resource in configs:
        if resource not in in_zk and configs[resource]:
            writes.append(write_configs(_snapshot_kind(resource, UPDATE_BROKER_CONFIG,
                                                       UPDATE_TOPIC_CONFIG),
                                        resource, configs[resource], passwords))
    for resource, zk_configs in in_zk.items():
        kraft = configs.get(resource, {})
        if dict(kraft) == dict(zk_configs):
            continue
        if kraft:
            writes.append(write_configs(_snapshot_kind(resource, UPDATE_BROKER_CONFIG,
                                                       UPDATE_TOPIC_CONFIG),
                                        resource, kraft, passwords))
        else:
            writes.append(delete_configs(_snapshot_kind(resource, DELETE_BROKER_CONFIG,
                                                        DELETE_TOPIC_CONFIG), resource))
    return writes


def _snapshot_kind(resource: ConfigResource, broker: str, topic: str) -> str:
    return broker if resource[0] == ConfigResourceType.BROKER else topic


def _decoded(config: ConfigEntityZNode, passwords: Passwords | None) -> dict[str, str]:
    return {key: _password_codec(passwords, key).decode(value) if _is_password(key) else value
            for key, value in config.config}



def configs_delta(previous: MetadataImage, image: MetadataImage, delta: MetadataDelta,
                  passwords: Passwords | None) -> list[ZkWrite]:
    """``handleConfigsDelta``: each touched resource's whole config, or its deletion."""
    if delta.configs_delta is None:
        return []
    deleted = {t.name for t in deleted_topics(previous.topics, image.topics)}
    writes = []
    for resource in delta.configs_delta.touched:
        if resource[0] == ConfigResourceType.TOPIC and resource[1] in deleted and \
                resource not in previous.configs.resources:
            continue  # Kafka's RemoveTopicRecord touches only configs the topic had
        configs = image.configs.get(resource)
        writes.append(write_configs(UPDATE_CONFIG, resource, configs, passwords)
                      if configs else delete_configs(DELETE_CONFIG, resource))
    return writes


# --- client quotas and SCRAM ----------------------------------------------------------------

def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: ``URLEncoder`` (letters, digits and ``.-_*`` kept),
    with ``*`` as ``%2A`` and a space as ``%20``."""
    out = []
    for char in name:
        if char.isascii() and (char.isalnum() or char in ".-_"):
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out)


def _zk_entity_name(name: str | None) -> str:
    return DEFAULT_ENTITY if name is None else sanitize(name)


def _quota_text(key: str, value: float, keys: Mapping[str, QuotaType]) -> str:
    """ZooKeeper's form of a quota: LONG and INT keys as integers, DOUBLE as Java prints it."""
    kind = keys.get(key)
    if kind is None:
        raise ZkWriteError(f"Invalid configuration key {key}")
    if kind is QuotaType.DOUBLE:
        return java_double_text(value)
    whole = int(value + _QUOTA_EPSILON)
    if abs(whole - value) > _QUOTA_EPSILON:
        raise ZkWriteError(f"Configuration {key} must be {kind.value} value")
    return str(whole)


def credential_text(image: ScramImage, user: str) -> dict[str, str]:
    """``ScramCredentialUtils.credentialToString`` of each of the user's credentials, by
    mechanism name."""
    return {mechanism.mechanism_name:
            f"salt={base64.b64encode(c.salt).decode()},"
            f"stored_key={base64.b64encode(c.stored_key).decode()},"
            f"server_key={base64.b64encode(c.server_key).decode()},iterations={c.iterations}"
            for mechanism, c in image.credentials_of(user)}


def write_client_quotas(entity: QuotaEntity, quotas: Mapping[str, float],
                        scram: Mapping[str, str]) -> ZkWrite | None:
    """``writeClientQuotas``: the entity's znode with its quotas (and a user's SCRAM
    credentials), set or created; None for an entity ZooKeeper has no place for."""
    names = dict(entity)
    keys = USER_CLIENT_QUOTAS
    if USER in names and CLIENT_ID in names:
        user = _zk_entity_name(names[USER])
        entity_type, name = "users", f"{user}/clients/{_zk_entity_name(names[CLIENT_ID])}"
        parent = f"/config/users/{user}/clients"
    else:
        if USER in names:
            entity_type, name = "users", _zk_entity_name(names[USER])
        elif CLIENT_ID in names:
            entity_type, name = "clients", _zk_entity_name(names[CLIENT_ID])
        elif IP in names:
            entity_type, name, keys = "ips", _zk_entity_name(names[IP]), IP_QUOTAS
        else:
            return None
        parent = f"/config/{entity_type}"
    props = {key: _quota_text(key, value, keys) for key, value in sorted(quotas.items())}
    props.update(scram)
    return _entity_write(UPDATE_CLIENT_QUOTA, f"Updated client quotas for {entity}",
                         entity_type, name, ConfigEntityZNode.of(props), parent)


def _quota_writes(image: MetadataImage, entities: Iterable[QuotaEntity],
                  users: Iterable[str | None]) -> list[ZkWrite]:
    """The non-user entities' writes, then each user's (quotas and SCRAM together), each in
    the order of Kafka's ``HashSet`` (it decides the change notifications' numbers)."""
    quotas = image.client_quotas.entities
    found = [write_client_quotas(entity, quotas.get(entity, {}), {})
             for entity in java_hash_order(list(entities), entity_hash)]
    for user in java_hash_order(list(users), _user_hash):
        entity: QuotaEntity = ((USER, user),)
        scram = {} if user is None else credential_text(image.scram, user)
        found.append(write_client_quotas(entity, quotas.get(entity, {}), scram))
    return [write for write in found if write is not None]


def _user_hash(user: str | None) -> int:
    return 0 if user is None else java_string_hash(user)


def _user_of(entity: QuotaEntity) -> tuple[bool, str | None]:
    """(is a user-only entity, its user)."""
    names = dict(entity)
    return USER in names and CLIENT_ID not in names, names.get(USER)


def quotas_sync(image: MetadataImage, tree: ZkTree) -> list[ZkWrite]:
    """``handleClientQuotasSnapshot``: every entity and SCRAM user of the image, plus those
    only ZooKeeper has (written with the image's, i.e. no, quotas)."""
    entities: dict[QuotaEntity, None] = {}
    users: dict[str | None, None] = {}
    for entity in image.client_quotas.entities:
        is_user, user = _user_of(entity)
        if is_user:
            users[user] = None
        else:
            entities[entity] = None
    users.update(dict.fromkeys(image.scram.users()))
    zk_entities = ([(USER, e) for e in tree.user_configs] + [(CLIENT_ID, e) for e in
                                                              tree.client_configs]
                   + [(IP, e) for e in tree.ip_configs])
    for entity_type, zk_entity in zk_entities:
        keys = {key for key, _ in zk_entity.config.config}
        if keys & _SCRAM_KEYS:  # Kafka looks for credentials in every entity type
            users[desanitize(zk_entity.name)] = None
        name = None if zk_entity.name == DEFAULT_ENTITY else desanitize(zk_entity.name)
        quota_entity: QuotaEntity = ((entity_type, name),)
        if keys - _SCRAM_KEYS and \
                quota_entity not in image.client_quotas.entities:
            if entity_type == USER:
                users[name] = None
            else:
                entities[quota_entity] = None
    for zk_entity in tree.user_client_configs:
        user, _, client = zk_entity.name.partition("/clients/")
        pair: QuotaEntity = tuple(sorted(
            ((CLIENT_ID, None if client == DEFAULT_ENTITY else desanitize(client)),
             (USER, None if user == DEFAULT_ENTITY else desanitize(user)))))
        if zk_entity.config.config and pair not in image.client_quotas.entities:
            entities[pair] = None
    return _quota_writes(image, entities, users)



def quotas_delta(image: MetadataImage, delta: MetadataDelta) -> list[ZkWrite]:
    """``handleClientQuotasDelta``: the touched non-user entities, then every user whose
    quotas or SCRAM credentials were touched."""
    entities: dict[QuotaEntity, None] = {}
    users: dict[str | None, None] = {}
    if delta.scram_delta is not None:
        users.update((user, None) for _, user in delta.scram_delta.touched)
    for entity in delta.client_quotas_delta.touched if delta.client_quotas_delta else ():
        is_user, user = _user_of(entity)
        if is_user:
            users[user] = None
        else:
            entities[entity] = None
    return _quota_writes(image, entities, users)


# --- producer ids ---------------------------------------------------------------------------

def write_producer_id(next_producer_id: int) -> ZkWrite:
    """``writeProducerId``: the block after KRaft's next id, broker -1; Kafka ignores the
    result."""
    block = ProducerIdBlockZNode(-1, next_producer_id,
                                 next_producer_id + PRODUCER_ID_BLOCK_SIZE - 1)
    return ZkWrite(UPDATE_PRODUCER_ID, "Set next producer ID",
                   (SetDataOp("/latest_producer_id_block", block.encode()),), ok=ANY_RESULT)

def producer_id_sync(image: MetadataImage, tree: ZkTree) -> list[ZkWrite]:
    """``handleProducerIdSnapshot``: the block when it is not the one after KRaft's next id
    (always so once dual write wrote it: it holds the block after KRaft's)."""
    next_id = image.producer_ids.next_producer_id
    block = tree.producer_id_block
    if next_id == NO_PRODUCER_IDS or (block is not None and block.block_end + 1 == next_id):
        return []
    return [write_producer_id(next_id)]
