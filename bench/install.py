"""Install the peer systems when missing: Debian packages by apt-get, Python ones by pip.

Run before the peer drivers are imported (they import kazoo, aiohttp and pysyncobj).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from peers.base import BenchError

DEBIAN_PACKAGES = {"etcd-server": "/usr/bin/etcd", "zookeeper": "/usr/share/java/zookeeper.jar",
                   "nats-server": "/usr/sbin/nats-server",
                   "rabbitmq-server": "/usr/lib/rabbitmq/bin/rabbitmq-server"}
PYTHON_PACKAGES = {"pysyncobj": "pysyncobj", "kazoo": "kazoo", "aiohttp": "aiohttp",
                   "nats": "nats-py", "aio_pika": "aio-pika"}
INSTALL_TIMEOUT_S = 900


def _run(argv: list[str]) -> None:
    print(f"installing: {' '.join(argv)}", file=sys.stderr)
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          timeout=INSTALL_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise BenchError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")


def ensure_debian(names: list[str]) -> None:
    missing = [n for n in names if not Path(DEBIAN_PACKAGES[n]).exists()]
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise BenchError(f"missing Debian packages {missing}: install them with apt-get as root")
    _run(["apt-get", "update"])
    _run(["apt-get", "install", "-y", *missing])


def ensure_python(modules: list[str]) -> None:
    missing = [PYTHON_PACKAGES[m] for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        _run([sys.executable, "-m", "pip", "install", *missing])
