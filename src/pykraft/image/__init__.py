"""The metadata image shared by controllers, brokers and tools (Kafka's ``image`` package)."""

from pykraft.image.cluster_image import BrokerRegistration, ClusterImage, ControllerRegistration
from pykraft.image.configs import ConfigResourceType, ConfigurationsImage
from pykraft.image.features import FeaturesImage
from pykraft.image.image import MetadataDelta, MetadataImage, Provenance
from pykraft.image.loader import ImageLoader
from pykraft.image.producer_ids import ProducerIdsImage
from pykraft.image.snapshot import (
    SnapshotPolicy,
    load_log_directory,
    load_segments,
    load_snapshot,
    write_image_snapshot,
)
from pykraft.image.topics import PartitionRegistration, TopicImage, TopicsImage

__all__ = [
    "BrokerRegistration",
    "ClusterImage",
    "ConfigResourceType",
    "ConfigurationsImage",
    "ControllerRegistration",
    "FeaturesImage",
    "ImageLoader",
    "MetadataDelta",
    "MetadataImage",
    "PartitionRegistration",
    "ProducerIdsImage",
    "Provenance",
    "SnapshotPolicy",
    "TopicImage",
    "TopicsImage",
    "load_log_directory",
    "load_segments",
    "load_snapshot",
    "write_image_snapshot",
]
