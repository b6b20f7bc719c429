"""The pinned Maven jars (scripts/maven_jars.py) and how a session gets them, without Maven
or a JVM: the pom and the sums agree, a cache is trusted only when it holds exactly the
pinned jars, and Spark Connect refuses jars it cannot load."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import fetch_kafka
import fetch_spark_kafka
from maven_jars import FetchError, PinnedJars, check_jars, read_sums, sha256

POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><properties>
<thing.version>1.2</thing.version></properties></project>"""


def test_the_connector_pom_and_sums_agree() -> None:
    pinned = fetch_spark_kafka.SPARK_KAFKA
    version = pinned.pinned_version()
    names = set(read_sums(pinned.sums))
    assert {f"spark-sql-kafka-0-10_2.13-{version}.jar",
            f"spark-token-provider-kafka-0-10_2.13-{version}.jar"} <= names
    clients = PinnedJars(pinned.pom, pinned.sums, pinned.cache, "kafka.clients.version")
    assert f"kafka-clients-{clients.pinned_version()}.jar" in names
    assert fetch_kafka.pinned_version() == fetch_kafka.KAFKA.pinned_version()


def _pinned(tmp_path: Path, jars: dict[str, bytes]) -> PinnedJars:
    """A pom pinning thing 1.2 and a sums file for ``jars``, cached under tmp_path."""
    (tmp_path / "pom.xml").write_text(POM)
    libs = tmp_path / "cache" / "1.2" / "libs"
    libs.mkdir(parents=True)
    for name, data in jars.items():
        (libs / name).write_bytes(data)
    (tmp_path / "jars.sha256").write_text(
        "".join(f"{sha256(libs / name)}  {name}\n" for name in sorted(jars)))
    (libs.parent / "classpath").write_text("cached\n")
    return PinnedJars(tmp_path / "pom.xml", tmp_path / "jars.sha256", tmp_path / "cache",
                      "thing.version")


def test_a_cache_holding_the_pinned_jars_is_used_without_maven(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pinned = _pinned(tmp_path, {"a-1.jar": b"a", "b-2.jar": b"b"})
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))  # no mvn to run
    libs = tmp_path / "cache" / "1.2" / "libs"
    assert pinned.fetch() == [libs / "a-1.jar", libs / "b-2.jar"]
    (libs / "b-2.jar").write_bytes(b"changed")  # the cache no longer holds the pin: refetch
    with pytest.raises(FetchError, match="mvn"):
        pinned.fetch()


def test_check_jars_refuses_a_missing_an_extra_or_an_altered_jar(tmp_path: Path) -> None:
    pinned = _pinned(tmp_path, {"a-1.jar": b"a"})
    libs, sums = tmp_path / "cache" / "1.2" / "libs", read_sums(pinned.sums)
    check_jars(libs, sums, "jars.sha256")
    (libs / "extra.jar").write_bytes(b"x")
    with pytest.raises(FetchError, match=r"unexpected \['extra.jar'\]"):
        check_jars(libs, sums, "jars.sha256")
    (libs / "extra.jar").unlink()
    (libs / "a-1.jar").write_bytes(b"altered")
    with pytest.raises(FetchError, match=r"SHA-256 of a-1\.jar"):
        check_jars(libs, sums, "jars.sha256")
    (libs / "a-1.jar").unlink()
    with pytest.raises(FetchError, match=r"missing \['a-1.jar'\]"):
        check_jars(libs, sums, "jars.sha256")


def test_spark_connect_refuses_jars() -> None:
    pytest.importorskip("pyspark")
    from pykraft.spark.session import spark_session

    with pytest.raises(ValueError, match="Connect server"):
        spark_session(remote="sc://127.0.0.1:1", jars=["connector.jar"])
