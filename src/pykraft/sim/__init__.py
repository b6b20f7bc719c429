"""Deterministic simulation of a KRaft quorum: one seed reproduces one run exactly."""
