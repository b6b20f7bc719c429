"""Kafka's on-disk formats for a KRaft metadata log directory (byte-compatible with Kafka)."""
