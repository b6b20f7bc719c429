"""The principal of an SSL connection: ``User:`` + the client certificate's distinguished
name, rewritten by ``ssl.principal.mapping.rules`` (Kafka's SslPrincipalMapper).

The DN is written as RFC 2253 does (most specific attribute first: ``CN=alice,OU=eng``).
Rules are tried in order: ``DEFAULT`` keeps the DN; ``RULE:<regex>/<replacement>/[LU]``
applies when the regex matches the whole DN, replacing it (``$1`` names a group) and then
lower- or upper-casing it. A DN that no rule matches fails authentication, as in Kafka.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cryptography import x509

from pykraft.security.session import ANONYMOUS, KafkaPrincipal

_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(?:,\s*|$)")


class NoMatchingRuleError(ValueError):
    """No ``ssl.principal.mapping.rules`` rule applies to a certificate's DN."""


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(self.replacement, dn)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else (
            result)


class PrincipalMapper:
    """``ssl.principal.mapping.rules`` parsed once; :meth:`principal` maps a DN."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.text = rules
        self._rules = _parse(rules)

    def principal(self, dn: str) -> KafkaPrincipal:
        for rule in self._rules:
            name = rule.apply(dn)
            if name is not None:
                return KafkaPrincipal("User", name)
        raise NoMatchingRuleError(f"No rules apply to {dn}, rules {self.text}")

    def of_certificate(self, der: bytes | None) -> KafkaPrincipal:
        """The principal of a peer certificate (DER), ``User:ANONYMOUS`` without one."""
        if der is None:
            return ANONYMOUS
        return self.principal(x509.load_der_x509_certificate(der).subject.rfc4514_string())


def _parse(text: str) -> tuple[_Rule, ...]:
    rules: list[_Rule] = []
    position = 0
    while position < len(text):
        match = _SPLITTER.match(text, position)
        if match is None or match.end() == position:
            break
        position = match.end()
        default, regex, replacement, case, invalid = match.group(2, 3, 4, 5, 6)
        if invalid:
            raise ValueError(f"Invalid rule: {invalid}")
        if default:
            rules.append(_Rule(None))
        elif regex is not None:
            try:
                pattern = re.compile(regex)
            except re.error as exc:
                raise ValueError(f"Invalid rule: {match.group(1)} ({exc})") from None
            rules.append(_Rule(pattern, _python_replacement(replacement), case))
    if not rules and text.strip():
        raise ValueError(f"Invalid rule: {text}")
    return tuple(rules) or (_Rule(None),)


def _python_replacement(java: str) -> str:
    """A Java ``replaceAll`` replacement (``$1``, ``\\x`` escapes) for :func:`re.sub`."""
    out: list[str] = []
    chars = iter(range(len(java)))
    for i in chars:
        char = java[i]
        if char == "\\" and i + 1 < len(java):
            out.append(java[i + 1].replace("\\", "\\\\"))
            next(chars)
        elif char == "$" and i + 1 < len(java) and java[i + 1].isdigit():
            end = i + 1
            while end < len(java) and java[end].isdigit():
                end += 1
            out.append(f"\\g<{java[i + 1:end]}>")
            for _ in range(end - i - 1):
                next(chars)
        else:
            out.append("\\\\" if char == "\\" else char)
    return "".join(out)
