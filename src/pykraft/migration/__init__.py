"""The ZooKeeper to KRaft migration (KIP-866), sans-I/O: ZooKeeper's znodes as Kafka 3.9
writes them, the typed tree the controller reads, the load of that tree into metadata
records, the writes keeping ZooKeeper up to date while migrating (sync, dual write, the
fencing of both), and the legacy RPCs the controller sends the ZooKeeper-mode brokers. The
runtime does every ZooKeeper read and write and every send; see
docs/design/migration-plan.md.
"""
