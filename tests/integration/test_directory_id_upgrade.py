"""A controller whose directory an older release formatted (no ``directory.id``) gets one
at start-up and keeps it across restarts, so it can later join a dynamic quorum."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from process_harness import leader_info

from pykraft.storage.meta_properties import META_PROPERTIES, read_meta_properties
from pykraft.tools.local_cluster import LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_directory_without_id_gains_one_and_keeps_it(
    make_cluster: Callable[..., LocalCluster],
) -> None:
    cluster = make_cluster(1)
    path = cluster.nodes[1].data / META_PROPERTIES
    lines = path.read_text(encoding="latin-1").splitlines(keepends=True)
    path.write_text("".join(line for line in lines if not line.startswith("directory.id=")),
                    encoding="latin-1")
    assert read_meta_properties(path).directory_id is None

    ids = []
    for _ in range(2):
        cluster.start(1)
        info = leader_info(cluster)
        assert info.leader_id == 1
        assert cluster.stop(1) == 0
        ids.append(read_meta_properties(path).directory_id)
    assert ids[0] is not None and ids[0] == ids[1]
