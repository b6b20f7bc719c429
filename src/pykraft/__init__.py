"""pykraft: Apache Kafka's KRaft metadata quorum, wire- and disk-compatible with Kafka."""

__version__ = "0.1.0"
