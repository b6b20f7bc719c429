"""The ``pykraft`` command line: Kafka-style tools over pykraft's libraries."""
