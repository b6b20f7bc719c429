"""The pure replica decisions of the data plane (Kafka's ``Partition`` and ``Replica``
rules): the leader's high watermark and ISR proposals, the follower's truncation by
diverging epoch, when an acks=all produce is answered. Sans-I/O: the broker drives it with
its logs and sockets, the simulator with in-memory ones."""
