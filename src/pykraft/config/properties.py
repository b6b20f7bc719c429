"""Reading Java ``.properties`` files the way ``java.util.Properties.load`` does.

Kafka's server configs and ``meta.properties`` are Java properties: ``#``/``!`` comments,
``=``, ``:`` or whitespace separators, backslash line continuations and escapes
(``\\uXXXX``, ``\\t``, ...). Operators copy them from Kafka, so we accept the full syntax.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pykraft.errors import ConfigError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATORS = "=: \t\f"


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """Parse properties text; later keys win, as in Java."""
    result: dict[str, str] = {}
    for logical in _logical_lines(text):
        key, value = _split_key_value(logical)
        result[_unescape(key, source)] = _unescape(value, source)
    return result


def load_properties(path: Path) -> dict[str, str]:
    """Read a properties file (UTF-8, as Java 9+ ``Properties.load(Reader)``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"properties file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read properties file {path}: {exc}") from None
    return parse_properties(text, str(path))


def _logical_lines(text: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    continuing = False
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if not continuing and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continuing = True
            continue
        lines.append(pending + line)
        pending = ""
        continuing = False
    if continuing and pending:
        lines.append(pending)
    return lines


def _split_key_value(line: str) -> tuple[str, str]:
    index = 0
    while index < len(line):
        char = line[index]
        if char == "\\":
            index += 2
            continue
        if char in _SEPARATORS:
            break
        index += 1
    key = line[:index]
    rest = line[index:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str, source: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\" or index + 1 == len(text):
            out.append(char)
            index += 1
            continue
        nxt = text[index + 1]
        if nxt == "u":
            digits = text[index + 2 : index + 6]
            try:
                if len(digits) != 4:
                    raise ValueError(digits)
                out.append(chr(int(digits, 16)))
            except ValueError:
                bad = text[index : index + 6]
                raise ConfigError(f"malformed \\uxxxx escape {bad!r} in {source}") from None
            index += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        index += 2
    return "".join(out)


def int_property(properties: Mapping[str, str], key: str, minimum: int) -> int | None:
    """``key``'s integer value, None when absent; a value that is not an integer, or one
    below ``minimum``, raises :class:`ConfigError` naming the key (Kafka's ConfigDef
    refuses such a server config at startup)."""
    text = properties.get(key)
    if text is None:
        return None
    try:
        number = int(text.strip())
    except ValueError:
        raise ConfigError(f"invalid value {text!r} for {key}: must be an integer") from None
    if number < minimum:
        raise ConfigError(f"invalid value {number} for {key}: must be >= {minimum}")
    return number
