"""Dump a ZooKeeper tree as JSON (data, raw bytes, versions) for the migration reference run.

Kept out of the package on purpose: it needs kazoo, which pykraft does not depend on yet
(run it with PYTHONPATH pointing at a `pip install --target` copy of kazoo==2.11.0).
"""

import json
import sys

from kazoo.client import KazooClient


def walk(zk: KazooClient, path: str, out: dict[str, dict[str, object]]) -> None:
    """Record one znode and recurse into its children, sorted for stable diffs."""
    if path == "/zookeeper":
        return
    data, stat = zk.get(path)
    try:
        text: object = json.loads(data) if data else None
    except ValueError:
        text = data.decode("utf-8", "replace")
    out[path] = {
        "data": text,
        "raw": data.decode("utf-8", "replace") if data else None,  # the bytes as written

        "version": stat.version,
        "cversion": stat.cversion,
        "ephemeral": stat.ephemeralOwner != 0,
    }
    for child in sorted(zk.get_children(path)):
        walk(zk, ("" if path == "/" else path) + "/" + child, out)


def main() -> None:
    """Usage: zkdump.py HOST:PORT OUT.json"""
    zk = KazooClient(hosts=sys.argv[1], timeout=10.0)
    zk.start(timeout=15)
    try:
        tree: dict[str, dict[str, object]] = {}
        walk(zk, "/", tree)
    finally:
        zk.stop()
        zk.close()
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump(tree, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
