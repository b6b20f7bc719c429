"""A partition leader's pure logic for user data: produce validation and producer state.

* :mod:`.validator`: a Produce request's records for one partition -> the batch to append
  (offsets from the log end, leader epoch, timestamps) or Kafka's error for them;
* :mod:`.producer_state`: idempotent producers (duplicates, epochs, sequences, expiration);
* :mod:`.producer_snapshot`: the ``.snapshot`` file bytes of that state.

The replicas' decisions (high watermark, ISR changes, truncation) are :mod:`pykraft.replica`.

No I/O, clocks or threads: time comes in as ``now_ms``, files as bytes.
"""
