"""Kafka's inline JAAS configuration (``sasl.jaas.config``), parsed as Kafka's JaasConfig does.

The text names login modules, each with a control flag and ``key=value`` options and ended
by ``;``, e.g. ``org.apache.kafka.common.security.plain.PlainLoginModule required
username="admin" password="admin-secret" user_alice="alice-secret";``. Values are words or
quoted strings (``"`` or ``'``, with backslash escapes); ``//`` and ``/* */`` comments are
skipped. Mistakes are :class:`ConfigError`\\s carrying Kafka's wording.

The settings a listener's SASL reads are looked up as Kafka's ``ListenerMechanismConfigs``
do: ``listener.name.<listener>.<mechanism>.<key>``, then ``listener.name.<listener>.<key>``
for listener-wide keys, then the bare key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pykraft.errors import ConfigError

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_FLAGS = ("required", "requisite", "sufficient", "optional")
_WORD_PUNCTUATION = "._-$"
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}


@dataclass(frozen=True, slots=True)
class LoginModule:
    """One entry: the module's class name, its control flag and its options."""

    class_name: str
    flag: str
    options: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    quoted: bool = False

    def is_char(self, char: str) -> bool:
        return not self.quoted and self.text == char


def _quoted(text: str, start: int) -> tuple[str, int]:
    """The value of the quoted string opening at ``start`` and the index after it."""
    quote, i = text[start], start + 1
    out: list[str] = []
    while i < len(text):
        char = text[i]
        if char == quote:
            return "".join(out), i + 1
        if char == "\\" and i + 1 < len(text):
            i += 1
            out.append(_ESCAPES.get(text[i], text[i]))
        else:
            out.append(char)
        i += 1
    raise ConfigError("unterminated quoted string in JAAS config")


def _tokens(text: str) -> Iterator[_Token]:
    """Words, quoted strings and single punctuation characters, comments skipped."""
    i = 0
    while i < len(text):
        char = text[i]
        if char.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
        elif char in "\"'":
            value, i = _quoted(text, i)
            yield _Token(value, quoted=True)
        elif char.isalnum() or char in _WORD_PUNCTUATION:
            start = i
            while i < len(text) and (text[i].isalnum() or text[i] in _WORD_PUNCTUATION):
                i += 1
            yield _Token(text[start:i])
        else:
            yield _Token(char)
            i += 1


def parse_jaas_config(text: str) -> tuple[LoginModule, ...]:
    """Every login module of ``text``; ConfigError when it is not JAAS syntax."""
    tokens = list(_tokens(text))
    modules: list[LoginModule] = []
    i = 0
    while i < len(tokens):
        class_name = tokens[i].text
        if i + 1 >= len(tokens):
            raise ConfigError("Login module control flag not specified in JAAS config")
        flag = tokens[i + 1].text
        if flag.lower() not in _FLAGS:
            raise ConfigError(f"Invalid login module control flag '{flag}' in JAAS config")
        i += 2
        options: dict[str, str] = {}
        while i < len(tokens) and not tokens[i].is_char(";"):
            key = tokens[i].text
            if (i + 2 >= len(tokens) or not tokens[i + 1].is_char("=")
                    or tokens[i + 2].is_char(";")):
                raise ConfigError(f"Value not specified for key '{key}' in JAAS config")
            options[key] = tokens[i + 2].text
            i += 3
        if i >= len(tokens):
            raise ConfigError("JAAS config entry not terminated by semi-colon")
        modules.append(LoginModule(class_name, flag.lower(), options))
        i += 1
    if not modules:
        raise ConfigError("Login module not specified in JAAS config")
    return tuple(modules)


def single_login_module(text: str, key: str) -> LoginModule:
    """The one module a ``sasl.jaas.config`` property may hold (Kafka's JaasContext rule)."""
    try:
        modules = parse_jaas_config(text)
    except ConfigError as exc:
        raise ConfigError(f"invalid value for {key}: {exc}") from None
    if len(modules) != 1:
        raise ConfigError(f"JAAS config property {key} contains {len(modules)} login modules, "
                          "should be 1 module")
    return modules[0]


def listener_value(props: Mapping[str, str], listener: str, key: str,
                   mechanism: str | None = None) -> str | None:
    """``key`` for one listener (and mechanism), most specific spelling first."""
    prefix = f"listener.name.{listener.lower()}."
    candidates = ([f"{prefix}{mechanism.lower()}.{key}"] if mechanism is not None else [])
    candidates += [f"{prefix}{key}", key]
    return next((props[name] for name in candidates if name in props), None)


def listener_jaas(props: Mapping[str, str], listener: str, mechanism: str) -> LoginModule | None:
    """The login module configured for ``mechanism`` on ``listener``, if any."""
    prefix = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    key = prefix if prefix in props else "sasl.jaas.config"
    text = props.get(key)
    return None if text is None else single_login_module(text, key)
