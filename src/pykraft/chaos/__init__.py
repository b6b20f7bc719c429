"""Fault injection against real processes and a checker of what clients saw (Jepsen-style).

``history``, ``checker`` and ``group_checks`` are pure: a history is a list of events and
the checkers turn it into figures (acknowledged, lost, duplicated, reordered, missed by the
group, ...). ``schedule`` draws a seeded, replayable list of faults. The rest drives
processes: ``links`` (a front-door TCP proxy per node that can cut the link between two
nodes), ``injector`` (signals, restarts, links), ``workload`` (idempotent producers and
assigned consumers that record the history), ``group_workload`` (a consumer group's members,
its committed offsets, its drain), ``replica_logs`` (each replica's log read from disk) and
``run`` (one run end to end).
"""
