"""The metadata image: an immutable view of everything the metadata log says, and the delta
that builds the next image from records.

Controllers and brokers share it: a replica replays committed records into a
:class:`MetadataDelta` and applies it to get the next :class:`MetadataImage`; a snapshot is
the image written back as records (:meth:`MetadataImage.records`), in Kafka's image write
order (features with metadata.version first, cluster, topics, configs, client quotas,
producer ids, ACLs, SCRAM credentials, delegation tokens). NoOpRecord is accepted and
ignored; ZkMigrationStateRecord is kept in the features image, as Kafka's. Transaction markers
are handled by :class:`pykraft.image.loader.ImageLoader`, not here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass

from pykraft.features import MINIMUM_METADATA_VERSION
from pykraft.image.acls import AclsDelta, AclsImage
from pykraft.image.client_quotas import ClientQuotasDelta, ClientQuotasImage
from pykraft.image.cluster_image import ClusterDelta, ClusterImage
from pykraft.image.configs import ConfigurationsDelta, ConfigurationsImage
from pykraft.image.delegation_tokens import DelegationTokensDelta, DelegationTokensImage
from pykraft.image.features import FeaturesDelta, FeaturesImage
from pykraft.image.producer_ids import ProducerIdsImage
from pykraft.image.scram import ScramDelta, ScramImage
from pykraft.image.topics import TopicsDelta, TopicsImage
from pykraft.records.metadata import (
    AbortTransactionRecord,
    AccessControlEntryRecord,
    BeginTransactionRecord,
    BrokerRegistrationChangeRecord,
    ClearElrRecord,
    ClientQuotaRecord,
    ConfigRecord,
    DelegationTokenRecord,
    EndTransactionRecord,
    FeatureLevelRecord,
    FenceBrokerRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RegisterControllerRecord,
    RemoveAccessControlEntryRecord,
    RemoveDelegationTokenRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UnregisterControllerRecord,
    UserScramCredentialRecord,
    ZkMigrationStateRecord,
    encode_metadata_record,
)

_IGNORED = (NoOpRecord, BeginTransactionRecord, EndTransactionRecord, AbortTransactionRecord)
_TOKENS = (DelegationTokenRecord, RemoveDelegationTokenRecord)
_SCRAM = (UserScramCredentialRecord, RemoveUserScramCredentialRecord)
_CLUSTER = (
    RegisterBrokerRecord, UnregisterBrokerRecord, FenceBrokerRecord, UnfenceBrokerRecord,
    BrokerRegistrationChangeRecord, RegisterControllerRecord, UnregisterControllerRecord,
)
_TOPICS = (TopicRecord, PartitionRecord, PartitionChangeRecord, RemoveTopicRecord, ClearElrRecord)
_ACLS = (AccessControlEntryRecord, RemoveAccessControlEntryRecord)


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where an image comes from: the last offset and epoch it contains (-1 when empty)."""

    last_offset: int = -1
    last_epoch: int = -1
    last_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class MetadataImage:
    """Immutable; two images are equal when their content is (provenance is not compared)."""

    features: FeaturesImage = dataclasses.field(default_factory=FeaturesImage)
    cluster: ClusterImage = dataclasses.field(default_factory=ClusterImage)
    topics: TopicsImage = dataclasses.field(default_factory=TopicsImage)
    configs: ConfigurationsImage = dataclasses.field(default_factory=ConfigurationsImage)
    client_quotas: ClientQuotasImage = dataclasses.field(default_factory=ClientQuotasImage)
    producer_ids: ProducerIdsImage = dataclasses.field(default_factory=ProducerIdsImage)
    acls: AclsImage = dataclasses.field(default_factory=AclsImage)
    scram: ScramImage = dataclasses.field(default_factory=ScramImage)
    delegation_tokens: DelegationTokensImage = dataclasses.field(
        default_factory=DelegationTokensImage)
    provenance: Provenance = dataclasses.field(default_factory=Provenance, compare=False)

    @property
    def metadata_version(self) -> int:
        """The finalized level, or the oldest supported one for an image without it."""
        level = self.features.metadata_version
        return MINIMUM_METADATA_VERSION.level if level is None else level

    @property
    def is_empty(self) -> bool:
        return self == MetadataImage()

    def records(self) -> list[tuple[object, int]]:
        """The image as (record, version) pairs in Kafka's image write order."""
        return list(self.iter_records())

    def iter_records(self) -> Iterator[tuple[object, int]]:
        """:meth:`records` one at a time, so a large image can be encoded in slices."""
        mv = self.metadata_version
        yield from self.features.records()
        yield from self.cluster.records(mv)
        yield from self.topics.records(mv)
        yield from self.configs.records()
        yield from self.client_quotas.records()
        yield from self.producer_ids.records()
        yield from self.acls.records()
        yield from self.scram.records(mv)
        yield from self.delegation_tokens.records(mv)

    def encoded_records(self) -> list[bytes]:
        """:meth:`records` framed as metadata record values."""
        return [encode_metadata_record(record, version) for record, version in self.records()]


class MetadataDelta:
    """Records replayed on top of an image; :meth:`apply` yields the next image."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self._features: FeaturesDelta | None = None
        self._cluster: ClusterDelta | None = None
        self._topics: TopicsDelta | None = None
        self._configs: ConfigurationsDelta | None = None
        self._quotas: ClientQuotasDelta | None = None
        self._producer_ids: ProducerIdsImage | None = None
        self._acls: AclsDelta | None = None
        self._scram: ScramDelta | None = None
        self._tokens: DelegationTokensDelta | None = None

    @property
    def features(self) -> FeaturesDelta:
        if self._features is None:
            self._features = FeaturesDelta(self.image.features)
        return self._features

    @property
    def cluster(self) -> ClusterDelta:
        if self._cluster is None:
            self._cluster = ClusterDelta(self.image.cluster)
        return self._cluster

    @property
    def topics(self) -> TopicsDelta:
        if self._topics is None:
            self._topics = TopicsDelta(self.image.topics)
        return self._topics

    @property
    def configs(self) -> ConfigurationsDelta:
        if self._configs is None:
            self._configs = ConfigurationsDelta(self.image.configs)
        return self._configs

    # Kafka's ``configsDelta()`` and kin: None when no record touched that part (the
    # migration's dual write writes to ZooKeeper what a delta touched, changed or not).
    @property
    def cluster_delta(self) -> ClusterDelta | None:
        return self._cluster

    @property
    def topics_delta(self) -> TopicsDelta | None:
        return self._topics

    @property
    def configs_delta(self) -> ConfigurationsDelta | None:
        return self._configs

    @property
    def client_quotas_delta(self) -> ClientQuotasDelta | None:
        return self._quotas

    @property
    def scram_delta(self) -> ScramDelta | None:
        return self._scram

    @property
    def producer_ids_delta(self) -> ProducerIdsImage | None:
        return self._producer_ids

    @property
    def acls_delta(self) -> AclsDelta | None:
        return self._acls

    @property
    def delegation_tokens_delta(self) -> DelegationTokensDelta | None:
        return self._tokens

    def replay(self, record: object) -> None:
        """Apply one record (a :class:`MetadataRecord` or a bare record message)."""
        body = record.message if isinstance(record, MetadataRecord) else record
        if isinstance(body, _CLUSTER):
            self.cluster.replay(body)
        elif isinstance(body, _TOPICS):
            removed = self.topics.replay(body)
            if removed is not None:
                self.configs.remove_topic(removed)
        elif isinstance(body, ConfigRecord):
            self.configs.replay(body)
        elif isinstance(body, ClientQuotaRecord):
            if self._quotas is None:
                self._quotas = ClientQuotasDelta(self.image.client_quotas)
            self._quotas.replay(body)
        elif isinstance(body, FeatureLevelRecord | ZkMigrationStateRecord):
            self.features.replay(body)
        elif isinstance(body, ProducerIdsRecord):
            self._producer_ids = (self._producer_ids or self.image.producer_ids).replay(body)
        elif isinstance(body, _ACLS):
            if self._acls is None:
                self._acls = AclsDelta(self.image.acls)
            self._acls.replay(body)
        elif isinstance(body, _SCRAM):
            if self._scram is None:
                self._scram = ScramDelta(self.image.scram)
            self._scram.replay(body)
        elif isinstance(body, _TOKENS):
            if self._tokens is None:
                self._tokens = DelegationTokensDelta(self.image.delegation_tokens)
            self._tokens.replay(body)
        elif not isinstance(body, _IGNORED):
            raise TypeError(f"{type(body).__name__} is not a metadata record")

    def apply(self, provenance: Provenance | None = None) -> MetadataImage:
        image = self.image
        provenance = image.provenance if provenance is None else provenance
        return MetadataImage(
            features=(image.features if self._features is None
                      else self._features.apply(provenance.last_offset)),
            cluster=image.cluster if self._cluster is None else self._cluster.apply(),
            topics=image.topics if self._topics is None else self._topics.apply(),
            configs=image.configs if self._configs is None else self._configs.apply(),
            client_quotas=(image.client_quotas if self._quotas is None
                           else self._quotas.apply()),
            producer_ids=self._producer_ids or image.producer_ids,
            acls=image.acls if self._acls is None else self._acls.apply(),
            scram=image.scram if self._scram is None else self._scram.apply(),
            delegation_tokens=(image.delegation_tokens if self._tokens is None
                               else self._tokens.apply()),
            provenance=provenance,
        )
