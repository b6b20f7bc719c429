"""The logic behind pykraft's Kafka-style tools; ``pykraft.cli`` only parses arguments."""
