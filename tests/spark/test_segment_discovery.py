"""PySpark's static lookup of Python data sources finds ``kraft`` and ``kafka-segments``."""

from __future__ import annotations

import io
import struct

import pytest


def test_pyspark_lookup_registers_both_sources() -> None:
    pytest.importorskip("pyspark")
    from pyspark.sql.worker.lookup_data_sources import _main

    def read_int(stream: io.BytesIO) -> int:  # PySpark's framing: big-endian int32
        return int(struct.unpack(">i", stream.read(4))[0])

    out = io.BytesIO()
    _main(io.BytesIO(), out)  # what the JVM runs at the first data source lookup
    out.seek(0)
    names = []
    for _ in range(read_int(out)):
        names.append(out.read(read_int(out)).decode())
        out.read(read_int(out))  # the pickled class
    assert {"kraft", "kafka-segments"} <= set(names)
