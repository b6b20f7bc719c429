"""The runtime: drives the sans-I/O raft core with a real clock, real disk and real sockets.

One asyncio event loop per process owns the core, the metadata log and every connection;
only fsync runs on a worker thread (group commit). See :mod:`pykraft.runtime.node`.
"""
