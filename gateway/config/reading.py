"""Reading a YAML file a person wrote (the config, a workflow), bounded: the one way the gateway reads one.

A few hundred bytes of YAML can ask for anything: nested aliases expand ten-fold per level (256 bytes, seven
levels: 10^7 nodes, 7.6 s and 290 MB unbounded, ten times that per level more), deep nesting overflows the
recursive composer and every recursive walk after it, a Latin-1 comment fails the decoder, a FIFO blocks the
reader for good. So only a regular file is read, at most `max_bytes` of it, strictly as UTF-8; nesting,
aliases and the nodes they expand to are counted while the document is composed, before anything is built from
it. Every failure, whatever raised it, is a `ConfigError` naming the file, where, what was found and the limit.
"""

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, CollectionStartEvent, Event
from yaml.nodes import MappingNode, Node, SequenceNode

from gateway.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Bounds:
    max_bytes: int = 1024 * 1024
    max_depth: int = 64
    """Nested collections; configs and workflows use about ten. Python's own recursion stops near 300."""
    max_aliases: int = 100
    max_nodes: int = 100_000
    """Scalars and collections once every alias is expanded: what later walks (validation, `${VAR}`) visit."""


BOUNDS = Bounds()


class _Refused(yaml.YAMLError):
    def __init__(self, problem: str, mark: Any) -> None:
        self.problem, self.problem_mark = problem, mark


class _Guard(Composer, SafeConstructor):
    """The pure-Python composer (it composes libyaml's events as well), counting as it goes; and a constructor
    whose failures name the line."""

    peek_event: Callable[[], Event]  # the parser's, pure-Python or libyaml's

    def __init__(self) -> None:
        Composer.__init__(self)  # libyaml's loaders do not run it
        self._depth = self._aliases = self._nodes = 0
        # id(node) -> the nodes it stands for and the collections nested in it, its aliases expanded
        self._sizes: dict[int, int] = {}
        self._heights: dict[int, int] = {}

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            self._aliases += 1
            if self._aliases > BOUNDS.max_aliases:
                raise _Refused(
                    f"more than {BOUNDS.max_aliases} aliases (*name), over the limit; write the values out",
                    event.start_mark,
                )
            node = super().compose_node(parent, index)
            if id(node) not in self._sizes:  # its anchor is still being composed: the alias is inside it
                raise _Refused(f"alias *{event.anchor} is inside the node it names (a cycle)", event.start_mark)
            self._count(self._sizes[id(node)], event)
            self._nest(self._depth + self._heights[id(node)], event)  # what later walks descend into
            return node
        self._count(1, event)
        deeper = isinstance(event, CollectionStartEvent)
        self._depth += deeper
        self._nest(self._depth, event)
        node = super().compose_node(parent, index)
        self._depth -= deeper
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = node.value
        elif isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        self._sizes[id(node)] = 1 + sum(self._sizes[id(c)] for c in children)
        self._heights[id(node)] = deeper + max((self._heights[id(c)] for c in children), default=0)
        return node

    def _nest(self, depth: int, event: Event) -> None:
        if depth > BOUNDS.max_depth:
            raise _Refused(
                f"nested more than {BOUNDS.max_depth} levels deep (aliases expanded), over the limit; flatten it",
                event.start_mark,
            )

    def _count(self, nodes: int, event: Event) -> None:
        """Counted as composed, an alias as all it stands for: refused at the first node past the limit."""
        self._nodes += nodes
        if self._nodes > BOUNDS.max_nodes:
            raise _Refused(
                f"{self._nodes:,} nodes by here (values, lists, mappings; an alias counts as all it stands for), "
                f"over the limit of {BOUNDS.max_nodes:,}; is it the right file? Nested aliases multiply",
                event.start_mark,
            )

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as exc:  # 5,000 digits (Python's int limit), the date 2024-13-45
            raise _Refused(f"a value the gateway cannot read: {exc}", node.start_mark) from None


class Yaml12Loader(_Guard, yaml.SafeLoader):
    """Safe YAML with 1.2 booleans (only true/false: 1.1 reads `on:`, a steering key, as True); the config's."""

    def __init__(self, stream: str) -> None:
        yaml.SafeLoader.__init__(self, stream)
        _Guard.__init__(self)


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)

_LIBYAML = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FastLoader(_Guard, _LIBYAML):  # type: ignore[misc,valid-type]
    """Safe YAML 1.1, parsed by libyaml when installed (workflows: pure-Python parsing of 80 took ~0.5 s)."""

    def __init__(self, stream: str) -> None:
        _LIBYAML.__init__(self, stream)
        _Guard.__init__(self)


Loader = type[Yaml12Loader] | type[FastLoader]


def read_bytes(path: Path) -> bytes:
    """A regular file's bytes, at most `BOUNDS.max_bytes` of them.

    Raises:
        ConfigError: unreadable, not a regular file, or bigger than the limit.
    """
    source = str(path)
    try:
        # Non-blocking: opening a FIFO put in the file's place must not wait for a writer that never comes.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as file:
            found = os.fstat(fd)
            if not stat.S_ISREG(found.st_mode):
                raise ConfigError(source, ["(file): not a regular file (a FIFO, socket or device); name a YAML file"])
            data = file.read(BOUNDS.max_bytes + 1)  # never more: the file may grow while it is read
    except OSError as exc:
        raise ConfigError(source, [f"(file): cannot read: {exc.strerror or exc}"]) from None
    if len(data) > BOUNDS.max_bytes:
        size = max(found.st_size, len(data))
        raise ConfigError(
            source, [f"(file): {size:,} bytes, over the limit of {BOUNDS.max_bytes:,}; is it the right file?"]
        )
    return data


def decode(data: bytes, source: str) -> str:
    """Strict UTF-8 (a leading BOM allowed), or a problem naming the first bad byte's offset and line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        hint = " (it looks like UTF-16)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise ConfigError(
            source,
            [f"line {line}: byte {exc.start:,} is 0x{data[exc.start]:02x}, not UTF-8{hint}; save the file as UTF-8"],
        ) from None


def parse_yaml(text: str, source: str, loader: Loader = Yaml12Loader) -> Any:
    """One YAML document, bounded.

    Raises:
        ConfigError: naming `source` and the line.
    """
    reader = None
    try:
        reader = loader(text)  # the reader refuses control characters (a NUL) as soon as it is built
        return reader.get_single_data()
    except yaml.reader.ReaderError as exc:  # no mark, and a two-line text
        line = text.count("\n", 0, exc.position) + 1
        raise ConfigError(source, [f"line {line}: {exc.reason}: U+{exc.character:04X}; remove it"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(file)"
        problem = (
            exc.problem if isinstance(exc, _Refused) else f"not valid YAML: {getattr(exc, 'problem', None) or exc}"
        )
        raise ConfigError(source, [f"{where}: {problem}"]) from None
    finally:
        if reader is not None:
            reader.dispose()


def read_yaml(path: Path, loader: Loader = Yaml12Loader) -> Any:
    """Read, decode and parse a YAML file, bounded.

    Raises:
        ConfigError: every failure, naming `path`.
    """
    return parse_yaml(decode(read_bytes(path), str(path)), str(path), loader)
