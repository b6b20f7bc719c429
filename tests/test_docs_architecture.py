"""docs/architecture.md states the import-linter contracts of pyproject.toml, no more, no less.

lint-imports holds the code to pyproject's contracts; this test holds the page that explains
them to pyproject, so neither the map nor the rules can change alone: the layer list, and for
every other contract its name and the packages on each side of it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PYPROJECT = ROOT / "pyproject.toml"

#: One layer: the packages on one line of the list, which must not import each other.
Layer = frozenset[str]
#: A contract other than the layers: (the modules it constrains, the modules they may not import).
Sides = tuple[frozenset[str], frozenset[str]]
_BOLD = re.compile(r"\*\*(.+?)\*\*", re.DOTALL)
_TICKED = re.compile(r"`([^`]+)`")
_IMPORT_NONE = re.compile(r"\bimports? none of\b")


def _words(text: str) -> str:
    return " ".join(text.split())


def _short(module: str) -> str:
    """``pykraft.log.retention`` as the page writes it: ``log.retention``."""
    return module.removeprefix("pykraft.")


def _layer(line: str) -> Layer:
    return frozenset(part.strip() for part in line.split("|"))


def _section(doc: str, heading: str) -> str:
    start = doc.index(f"\n## {heading}\n")
    end = doc.find("\n## ", start + 1)
    return doc[start:] if end < 0 else doc[start:end]


def pyproject_contracts() -> tuple[str, list[Layer], dict[str, Sides]]:
    """The layers contract's name and layers, and every other contract's sides."""
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    layers = [c for c in contracts if c["type"] == "layers"]
    assert len(layers) == 1, "one layers contract"
    others: dict[str, Sides] = {}
    for contract in contracts:
        if contract["type"] == "forbidden":
            others[contract["name"]] = (
                frozenset(map(_short, contract["source_modules"])),
                frozenset(map(_short, contract["forbidden_modules"])))
        elif contract["type"] == "acyclic_siblings":
            others[contract["name"]] = (frozenset(contract["ancestors"]), frozenset())
        else:
            assert contract["type"] == "layers", f"a contract this test cannot read: {contract}"
    return layers[0]["name"], [_layer(line) for line in layers[0]["layers"]], others


def doc_contracts() -> tuple[str, list[Layer], dict[str, Sides]]:
    """The same, read from the page's "Layers" section: the contract named in bold before the
    layer list, the list itself, then one bullet per other contract: its name in bold, the
    modules it constrains, "import(s) none of", the modules they may not import."""
    section = _section(DOC.read_text(), "Layers")
    before, listing, after = section.split("```", 2)
    layer_names = [_words(name) for name in _BOLD.findall(before)]
    assert len(layer_names) == 1, "the layers contract named once before its list"
    layers = [_layer(line) for line in listing.strip().splitlines()]
    others: dict[str, Sides] = {}
    for bullet in re.split(r"\n- ", after)[1:]:
        name_match = _BOLD.match(bullet)
        assert name_match is not None, f"a contract bullet starts with its name: {bullet!r}"
        body = bullet[name_match.end():]
        constrained, *forbidden = _IMPORT_NONE.split(body, maxsplit=1)
        others[_words(name_match.group(1))] = (
            frozenset(_TICKED.findall(constrained)),
            frozenset(_TICKED.findall("".join(forbidden))))
    return layer_names[0], layers, others


def test_the_layer_list_is_pyprojects() -> None:
    name, layers, _ = pyproject_contracts()
    doc_name, doc_layers, _ = doc_contracts()
    assert doc_name == name
    assert doc_layers == layers


def test_every_other_contract_is_stated_with_its_packages() -> None:
    _, _, contracts = pyproject_contracts()
    _, _, doc = doc_contracts()
    assert sorted(doc) == sorted(contracts), "the contracts' names"
    for name, sides in contracts.items():
        named = zip(("constrained", "forbidden"), sides, doc[name], strict=True)
        for side, listed, stated in named:
            assert stated == listed, (f"{name} ({side}): the page lacks {sorted(listed - stated)}"
                                      f" and adds {sorted(stated - listed)}")


def test_every_layered_package_has_its_paragraph() -> None:
    """"The packages" gives every package of the layer list a paragraph headed by its name."""
    _, layers, _ = pyproject_contracts()
    packages = _section(DOC.read_text(), "The packages")
    headed = {name for head in re.findall(r"^\*\*(.+?)\*\*", packages, re.MULTILINE)
              for name in _TICKED.findall(head)}
    assert headed == set().union(*layers)

