"""Kafka's inline JAAS syntax: modules, flags, options, quoting, comments and the refusals."""

from __future__ import annotations

import pytest

from pykraft.errors import ConfigError
from pykraft.security.jaas import (
    PLAIN_LOGIN_MODULE,
    listener_jaas,
    listener_value,
    parse_jaas_config,
    single_login_module,
)

PLAIN_JAAS = (f'{PLAIN_LOGIN_MODULE} required username="admin" password="admin-secret" '
              'user_admin="admin-secret" user_alice="alice-secret";')


def test_plain_login_module_with_users() -> None:
    (module,) = parse_jaas_config(PLAIN_JAAS)
    assert module.class_name == PLAIN_LOGIN_MODULE
    assert module.flag == "required"
    assert dict(module.options) == {"username": "admin", "password": "admin-secret",
                                    "user_admin": "admin-secret", "user_alice": "alice-secret"}


def test_quotes_escapes_words_and_comments() -> None:
    text = """
        // a comment
        com.example.First REQUIRED a=word b='single "quoted"' c="a\\"b\\\\c\\n" /* x=y */ ;
        com.example.Second optional;
    """
    first, second = parse_jaas_config(text)
    assert dict(first.options) == {"a": "word", "b": 'single "quoted"', "c": 'a"b\\c\n'}
    assert first.flag == "required"
    assert (second.class_name, second.flag, dict(second.options)) == (
        "com.example.Second", "optional", {})


def test_values_may_hold_separators_when_quoted() -> None:
    (module,) = parse_jaas_config('m required password="p;a=s s";')
    assert module.options["password"] == "p;a=s s"


@pytest.mark.parametrize(("text", "message"), [
    ("", "Login module not specified in JAAS config"),
    ("   // only a comment", "Login module not specified in JAAS config"),
    ("com.example.M", "Login module control flag not specified in JAAS config"),
    ("com.example.M mandatory;", "Invalid login module control flag 'mandatory' in JAAS config"),
    ("com.example.M required user;", "Value not specified for key 'user' in JAAS config"),
    ("com.example.M required user=;", "Value not specified for key 'user' in JAAS config"),
    ('com.example.M required user="x"', "JAAS config entry not terminated by semi-colon"),
    ('com.example.M required user="x;', "unterminated quoted string in JAAS config"),
])
def test_refusals_carry_kafkas_wording(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_jaas_config(text)


def test_a_property_holds_exactly_one_module() -> None:
    with pytest.raises(ConfigError, match=r"contains 2 login modules, should be 1 module"):
        single_login_module("a required; b required;", "sasl.jaas.config")
    with pytest.raises(ConfigError, match=r"invalid value for sasl\.jaas\.config: Login module"):
        single_login_module("", "sasl.jaas.config")


def test_listener_lookups_prefer_the_most_specific_key() -> None:
    props = {
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "5000",
        "connections.max.reauth.ms": "100",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        "sasl.jaas.config": "m required username=u password=p;",
    }
    assert listener_value(props, "SASL_PLAINTEXT", "sasl.enabled.mechanisms") == "SCRAM-SHA-512"
    assert listener_value(props, "OTHER", "sasl.enabled.mechanisms") == "PLAIN"
    assert listener_value(props, "SASL_PLAINTEXT", "connections.max.reauth.ms", "PLAIN") == "5000"
    assert listener_value(props, "SASL_PLAINTEXT", "connections.max.reauth.ms",
                          "SCRAM-SHA-512") == "100"
    plain = listener_jaas(props, "SASL_PLAINTEXT", "PLAIN")
    assert plain is not None and plain.options["user_alice"] == "alice-secret"
    fallback = listener_jaas(props, "SASL_PLAINTEXT", "SCRAM-SHA-512")
    assert fallback is not None and fallback.class_name == "m"
    assert listener_jaas({}, "SASL_PLAINTEXT", "PLAIN") is None
