"""The partition log and its rules, as Kafka's ``storage.internals.log``: what a partition
leader does with user data above the file format of :mod:`pykraft.storage`.

* pure rules (no event loop, sockets, threads or clock; time comes in as ``now_ms``):
  :mod:`.validator` (Kafka's ``LogValidator``: a produced batch checked, its offsets,
  timestamps and codec assigned), :mod:`.producer_state` (``ProducerStateManager``:
  idempotent producers' duplicates, epochs, sequences), :mod:`.producer_snapshot` (its
  ``.snapshot`` file as bytes), :mod:`.batch_records` (a stored batch's records in any
  codec, for ListOffsets, the tools and Spark), :mod:`.retention` (which segments retention
  deletes), :mod:`.compaction` (when and what the log cleaner compacts, which record
  survives), :mod:`.cleaner_bytes` (the offset map and the cleaned copy of a segment) and
  :mod:`.partition_reads` (Fetch, ListOffsets and DeleteRecords decisions over a log);
* their drivers over the files: :mod:`.log_manager` (Kafka's ``LogManager``: the log
  directories and their checkpoints), :mod:`.cleaner` (one compaction pass, the CPU part
  on the cleaner's thread), :mod:`.producer_snapshot_files` (producer state written and
  reloaded) and :mod:`.log_dir_failure` (a failed log directory: offline and reported,
  or the broker halts).

The broker drives this package; the metadata log (:mod:`pykraft.storage.metadata_log`) needs
none of it.
"""
