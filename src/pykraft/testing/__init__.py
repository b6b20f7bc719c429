"""Harness support for tests and benchmarks: nothing in the server imports it (an
import-linter contract checks that); a process serves it only when its properties say so."""
