"""Fault injection against real processes and a checker of what clients saw (Jepsen-style).

``history`` and ``checker`` are pure: a history is a list of events and the checker turns it
into figures (acknowledged, lost, duplicated, reordered, ...). ``schedule`` draws a seeded,
replayable list of faults. The rest drives processes: ``links`` (a front-door TCP proxy per
node that can cut the link between two nodes), ``injector`` (signals, restarts, links),
``workload`` (idempotent producers and assigned consumers that record the history),
``replica_logs`` (each replica's log read from disk) and ``run`` (one run end to end).
"""
