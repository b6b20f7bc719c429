"""Consumer groups as pure logic: the group coordinator's state, its ``__consumer_offsets``
records and its assignors, with no I/O (the broker's runtime feeds it requests, time and
the records it loads, and appends what it returns)."""
