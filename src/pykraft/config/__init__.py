"""Kafka-style configuration: ``.properties`` files and the server keys pykraft reads."""
