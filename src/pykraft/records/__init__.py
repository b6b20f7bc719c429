"""Kafka record batches (v2), control records and metadata records."""
