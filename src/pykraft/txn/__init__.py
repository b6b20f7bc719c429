"""Transactions as pure logic: the transaction coordinator's state machine, its
``__transaction_state`` records and its shards, with no I/O (the broker's runtime feeds it
requests, time, committed writes and marker results, and carries out what it returns)."""
