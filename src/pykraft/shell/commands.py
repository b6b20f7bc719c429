"""The metadata shell's commands over an image tree (Kafka's ``kafka-metadata-shell``).

Paths are absolute or relative to the working directory, ``.`` and ``..`` work, and a path
component may be a glob (``/image/topics/byName/*``). Every command returns its output
lines, so the interactive loop and the non-interactive mode print the same thing.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pykraft.shell.tree import DirNode, FileNode, Node

_GLOB_CHARS = frozenset("*?[")


@dataclass(slots=True)
class Output:
    """What a command printed: normal lines, error lines, and whether to leave the shell."""

    lines: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    exit: bool = False

    @property
    def failed(self) -> bool:
        return bool(self.errors)

    def error(self, text: str) -> None:
        self.errors.append(text)


def _sort_key(name: str) -> tuple[int, int, str]:
    """Numeric names (broker ids, partitions) in numeric order, then the rest by name."""
    return (0, int(name), "") if name.isdigit() else (1, 0, name)


def _children(node: DirNode) -> list[str]:
    return sorted(node.children, key=_sort_key)


@dataclass(frozen=True, slots=True)
class _Command:
    usage: str
    summary: str
    run: Callable[[MetadataShell, list[str], Output], None]


class MetadataShell:
    """One shell session: a tree, a working directory and a history."""

    def __init__(self, root: DirNode) -> None:
        self.root = root
        self.cwd: tuple[str, ...] = ()
        self.history: list[str] = []

    # -- paths ------------------------------------------------------------------------

    def pwd(self) -> str:
        return "/" + "/".join(self.cwd)

    def resolve(self, target: str) -> list[tuple[tuple[str, ...], Node]]:
        """Every (absolute path, node) matching ``target``; empty when nothing does."""
        start = () if target.startswith("/") else self.cwd
        found: list[tuple[tuple[str, ...], Node]] = [(start, self._node_at(start))]
        for part in (p for p in target.split("/") if p and p != "."):
            step: list[tuple[tuple[str, ...], Node]] = []
            for path, node in found:
                if part == "..":
                    parent = path[:-1]
                    step.append((parent, self._node_at(parent)))
                elif isinstance(node, DirNode):
                    names = (fnmatch.filter(_children(node), part)
                             if _GLOB_CHARS & set(part) else [part] * (part in node.children))
                    step += [((*path, name), node.children[name]) for name in names]
            found = step
        return found

    def _node_at(self, path: tuple[str, ...]) -> Node:
        node: Node = self.root
        for part in path:
            assert isinstance(node, DirNode)
            node = node.children[part]
        return node

    def _matches(self, command: str, target: str,
                 out: Output) -> list[tuple[tuple[str, ...], Node]]:
        found = self.resolve(target)
        if not found:
            out.error(f"{command}: {target}: no such file or directory.")
        return found

    # -- commands ---------------------------------------------------------------------

    def execute(self, line: str) -> Output:
        """Run one command line."""
        out = Output()
        try:
            words = shlex.split(line)
        except ValueError as exc:
            out.error(f"error: {exc}")
            return out
        if not words:
            return out
        self.history.append(line.strip())
        command = COMMANDS.get(words[0])
        if command is None:
            out.error(f"{words[0]}: command not found. Type 'help' for the list of commands.")
            return out
        command.run(self, words[1:], out)
        return out

    def _ls(self, args: list[str], out: Output) -> None:
        targets = args or ["."]
        for target in targets:
            for path, node in self._matches("ls", target, out):
                if isinstance(node, FileNode):
                    out.lines.append(path[-1] if path else "/")
                    continue
                if len(targets) > 1:
                    if out.lines:
                        out.lines.append("")
                    out.lines.append(f"{target}:")
                out.lines.extend(_children(node))

    def _cd(self, args: list[str], out: Output) -> None:
        if len(args) > 1:
            out.error("cd: too many arguments.")
            return
        target = args[0] if args else "/"
        found = self._matches("cd", target, out)
        if len(found) > 1:
            out.error(f"cd: {target}: more than one directory matches.")
        elif found and not isinstance(found[0][1], DirNode):
            out.error(f"cd: {target}: not a directory.")
        elif found:
            self.cwd = found[0][0]

    def _cat(self, args: list[str], out: Output) -> None:
        if not args:
            out.error("cat: no files given.")
        for target in args:
            for _, node in self._matches("cat", target, out):
                if isinstance(node, DirNode):
                    out.error(f"cat: {target}: Is a directory")
                else:
                    out.lines.append(node.text)

    def _find(self, args: list[str], out: Output) -> None:
        for target in args or ["."]:
            for path, node in self._matches("find", target, out):
                out.lines.extend(_walk("/" + "/".join(path), node))

    def _tree(self, args: list[str], out: Output) -> None:
        for target in args or ["."]:
            for path, node in self._matches("tree", target, out):
                out.lines.extend(_tree_lines(path[-1] if path else "/", node, ""))

    def _pwd(self, args: list[str], out: Output) -> None:
        out.lines.append(self.pwd())

    def _history(self, args: list[str], out: Output) -> None:
        try:
            count = int(args[0]) if args else len(self.history)
        except ValueError:
            out.error(f"history: {args[0]}: not a number.")
            return
        start = max(len(self.history) - max(count, 0), 0)
        for number in range(start, len(self.history)):
            out.lines.append(f"{number + 1:>5}  {self.history[number]}")

    def _help(self, args: list[str], out: Output) -> None:
        out.lines.append("Welcome to the pykraft metadata shell. Commands:")
        for name, command in COMMANDS.items():
            out.lines.append(f"  {name:<8} {command.summary}")

    def _man(self, args: list[str], out: Output) -> None:
        if len(args) != 1 or args[0] not in COMMANDS:
            out.error(f"man: choose one of: {', '.join(COMMANDS)}")
            return
        command = COMMANDS[args[0]]
        out.lines += [f"usage: {command.usage}", "", command.summary]

    def _exit(self, args: list[str], out: Output) -> None:
        out.exit = True


def _walk(path: str, node: Node) -> Iterator[str]:
    yield path
    if isinstance(node, DirNode):
        for name in _children(node):
            yield from _walk(path.rstrip("/") + "/" + name, node.children[name])


def _tree_lines(name: str, node: Node, indent: str) -> Iterator[str]:
    if isinstance(node, FileNode):
        yield f"{indent}{name}: {node.text}"
        return
    yield f"{indent}{name}:"
    for child in _children(node):
        yield from _tree_lines(child, node.children[child], indent + "  ")


COMMANDS: dict[str, _Command] = {
    "cat": _Command("cat <targets...>", "Show the contents of metadata files.",
                    MetadataShell._cat),
    "cd": _Command("cd [target]", "Move into a different directory (default /).",
                   MetadataShell._cd),
    "exit": _Command("exit", "Exit the metadata shell.", MetadataShell._exit),
    "find": _Command("find [paths...]", "Search for nodes in the directory hierarchy.",
                     MetadataShell._find),
    "help": _Command("help", "Display this help message.", MetadataShell._help),
    "history": _Command("history [count]", "Print command history.", MetadataShell._history),
    "ls": _Command("ls [targets...]", "List metadata nodes.", MetadataShell._ls),
    "man": _Command("man <command>", "Show the help text for a specific command.",
                    MetadataShell._man),
    "pwd": _Command("pwd", "Print the current working directory.", MetadataShell._pwd),
    "tree": _Command("tree [targets...]", "Print a tree of metadata nodes and their contents.",
                     MetadataShell._tree),
}
