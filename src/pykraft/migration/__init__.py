"""The ZooKeeper to KRaft migration (KIP-866), sans-I/O: ZooKeeper's znodes as Kafka 3.9
writes them, the typed tree the controller reads, and the load of that tree into metadata
records. The runtime does every ZooKeeper read and write; see docs/design/migration-plan.md.
"""
