from pathlib import Path

import pytest

from pykraft.config.properties import int_property, load_properties, parse_properties
from pykraft.errors import ConfigError


def test_java_properties_syntax() -> None:
    text = (
        "# comment\n"
        "! also a comment\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "  d=with spaces  \n"
        "e=multi \\\n"
        "   line\n"
        "f=tab\\there\n"
        "g=\\u0041BC\n"
        "h\\=key=v\n"
        "empty=\n"
        "a=override\n"
    )
    assert parse_properties(text) == {
        "a": "override",
        "b": "2",
        "c": "3",
        "d": "with spaces  ",
        "e": "multi line",
        "f": "tab\there",
        "g": "ABC",
        "h=key": "v",
        "empty": "",
    }


def test_kafka_meta_properties_fixture(kafka37_dir: Path) -> None:
    props = load_properties(kafka37_dir / "meta.properties")
    assert props == {
        "node.id": "1",
        "directory.id": "XHhkr4tkSsD900pOQ8pPfg",
        "version": "1",
        "cluster.id": "q1w2e3r4t5y6u7i8o9p0",
    }


def test_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_properties(tmp_path / "missing.properties")
    with pytest.raises(ConfigError, match="uxxxx"):
        parse_properties("k=\\u12")


def test_quorum_config_reads_auto_join() -> None:
    from pykraft.errors import ConfigError
    from pykraft.raft.config import QuorumConfig

    voters = {"controller.quorum.voters": "1@h:1"}
    assert QuorumConfig.from_properties(voters).auto_join is False
    on = QuorumConfig.from_properties({**voters, "controller.quorum.auto.join.enable": "true"})
    assert on.auto_join is True
    with pytest.raises(ConfigError, match=r"auto\.join\.enable"):
        QuorumConfig.from_properties({**voters, "controller.quorum.auto.join.enable": "yes"})


def test_int_property_reads_checks_and_names_the_key() -> None:
    assert int_property({"a": " 7 "}, "a", 1) == 7
    assert int_property({}, "a", 1) is None
    with pytest.raises(ConfigError, match="invalid value 'x' for a: must be an integer"):
        int_property({"a": "x"}, "a", 1)
    with pytest.raises(ConfigError, match="invalid value 0 for a: must be >= 1"):
        int_property({"a": "0"}, "a", 1)
