"""The index behind `gateway.find_tools`: SQLite FTS5 with `bm25()` field weights over the catalog's tools.

Why FTS5: it ships with Python's `sqlite3` (no new dependency, no hand-written scorer), its `bm25()` is
Okapi BM25 with a weight per column, its `porter` tokenizer stems ("requests" finds "request"), and a
query over 1,000 tools takes well under a millisecond. The index is rebuilt whole when the catalog
changes (some 30 ms at 1,000 tools on a busy machine), never patched.

Names are split before indexing (`_ . - /` and camelCase: `getMergeRequest` → `get merge request`), so
a user's words meet a tool's name. Columns and weights: the name (with its server) counts most, then
the description, then parameter names and their descriptions.
"""

import re
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import mcp.types as types

WEIGHTS = (10.0, 1.0, 1.0)
"""bm25() weights of the columns (name, description, params): the name is the strongest evidence."""
MAX_QUERY_CHARS = 1_000
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORDS = re.compile(r"[A-Za-z0-9]+")
STOPWORDS = frozenset(
    "a an and any are as at be by can could do does for from have how i in into is it its me my of on or our "
    "please should some that the their them there this to us we what when where which who will with would you "
    "your tool tools".split()
)
"""Words that say nothing about which tool is meant ("which tool do I use to ..."): dropped from queries."""
SYNONYMS: dict[str, tuple[str, ...]] = {
    "mr": ("merge", "request"),
    "mrs": ("merge", "request"),
    "pr": ("merge", "pull", "request"),
    "prs": ("merge", "pull", "request"),
    "ticket": ("issue",),
    "tickets": ("issue",),
    "bug": ("issue",),
    "bugs": ("issue",),
    "comment": ("note",),
    "comments": ("note",),
    "note": ("comment",),
    "notes": ("comment",),
    "thread": ("discussion",),
    "repo": ("repository", "project"),
    "ci": ("pipeline", "job"),
    "open": ("create",),
    "file": ("create",),
    "new": ("create",),
    "make": ("create",),
    "show": ("get",),
    "view": ("get",),
    "display": ("get",),
    "see": ("get",),
    "find": ("search",),
    "lookup": ("search",),
    "remove": ("delete",),
    "history": ("log", "changelog"),
    "notify": ("subscribe", "notification"),
    "notified": ("subscribe", "notification"),
    "reaction": ("emoji", "award"),
    "stage": ("add",),
    "unstage": ("reset",),
    "watching": ("watcher",),
}
"""Developer vocabulary whose words differ from the tools': a query term also searches these. Both
directions of an abbreviation (`mr` in a tool name, "merge request" in a query) meet, because names
are expanded the same way when indexed."""
ABBREVIATIONS = frozenset({"mr", "mrs", "pr", "prs", "repo", "ci"})


def words(text: str) -> list[str]:
    """Lower-case words of a name or a sentence: separators and camelCase humps split words."""
    out: list[str] = []
    for part in _WORDS.findall(text):
        if part.islower() or part.isdigit():  # most words: no hump to split (the regex is the slow part)
            out.append(part)
        else:
            out.extend(w.lower() for w in _CAMEL.sub(" ", part).split())
    return out


def terms(text: str) -> list[str]:
    """A query's search terms: its words without stopwords, each with its synonyms."""
    found: dict[str, None] = {}
    for word in words(text):
        if word in STOPWORDS:
            continue
        found[word] = None
        found.update(dict.fromkeys(SYNONYMS.get(word, ())))
    return list(found)


def _stem(word: str) -> str:
    """Enough stemming to compare a query's words with a name's (`commits`/`commit`); FTS5 stems the rest."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _name_text(name: str) -> str:
    """A name's words for the index, abbreviations spelled out (`gitlab_list_mrs`: list mrs merge request)."""
    return " ".join(w for word in words(name) for w in (word, *(SYNONYMS[word] if word in ABBREVIATIONS else ())))


def _param_text(schema: dict[str, Any]) -> str:
    props = schema.get("properties")
    if not isinstance(props, dict):
        return ""
    parts: list[str] = []
    for name, spec in props.items():
        parts.append(" ".join(words(str(name))))
        if isinstance(spec, dict) and isinstance(spec.get("description"), str):
            parts.append(spec["description"])
    return " ".join(parts)


def required(tool: types.Tool) -> list[str]:
    req = tool.input_schema.get("required") if isinstance(tool.input_schema, dict) else None
    return [str(r) for r in req] if isinstance(req, list) else []


@dataclass(frozen=True, slots=True)
class Hit:
    name: str
    server: str
    tool: types.Tool
    score: float
    """-bm25(): higher is better; comparable within one answer only."""


@dataclass(frozen=True, slots=True)
class Matches:
    hits: list[Hit]
    total: int
    """How many tools matched at all (before `limit` and the visibility predicate's cut)."""
    terms: list[str]
    """The query words that were searched (stopwords dropped)."""


Visible = Callable[[str, str], bool]
"""(exposed name, server) -> may this session see the tool? The policy hook: search and listing both ask it."""


class SearchIndex:
    """One in-memory FTS5 table of (exposed name, server, tool); `build` replaces its contents."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE tools USING fts5(name, description, params, tokenize='porter unicode61')"
        )
        self._rows: list[tuple[str, str, types.Tool]] = []
        self._names: list[set[str]] = []

    def __len__(self) -> int:
        return len(self._rows)

    def build(self, entries: Iterable[tuple[str, str, types.Tool]]) -> None:
        """Index (exposed name, server, tool) triples, replacing what was there."""
        self._rows = list(entries)
        self._names = [
            {_stem(w) for w in words(tool.name) if w not in STOPWORDS} - {srv} for _n, srv, tool in self._rows
        ]
        with self._db:
            self._db.execute("DELETE FROM tools")
            self._db.executemany(
                "INSERT INTO tools(rowid, name, description, params) VALUES (?, ?, ?, ?)",
                (
                    (i, _name_text(name), tool.description or "", _param_text(tool.input_schema))
                    for i, (name, _server, tool) in enumerate(self._rows)
                ),
            )

    def search(self, query: str, *, limit: int, server: str | None = None, visible: Visible | None = None) -> Matches:
        """The best `limit` tools for `query`, best first; `server` keeps one namespace, `visible` the allowed.

        Raises:
            ValueError: the query is longer than MAX_QUERY_CHARS (the caller reports it).
        """
        if len(query) > MAX_QUERY_CHARS:
            raise ValueError(f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}")
        searched = terms(query)
        if not searched:
            return Matches([], 0, [])
        # Each term quoted: the user's text never reaches FTS5's query syntax. OR ranks by how many
        # terms a tool matches and how rare they are (BM25's idf), which is what "closest" means here.
        match = " OR ".join(f'"{t}"' for t in searched)
        rows = self._db.execute(
            "SELECT rowid, bm25(tools, ?, ?, ?) AS rank FROM tools WHERE tools MATCH ? ORDER BY rank",
            (*WEIGHTS, match),
        ).fetchall()
        wanted = {_stem(t) for t in searched}
        scored: list[Hit] = []
        for rowid, rank in rows:
            name, srv, tool = self._rows[rowid]
            if (server is not None and srv != server) or (visible is not None and not visible(name, srv)):
                continue
            own = self._names[rowid]
            # BM25 favours rare words wherever they are; a tool whose own name the query spells out
            # ("get issue" for jira_get_issue) is the better answer, so name coverage scales the score.
            coverage = len(own & wanted) / len(own) if own else 0.0
            scored.append(Hit(name, srv, tool, round(-rank * (1.0 + coverage), 3)))
        scored.sort(key=lambda hit: -hit.score)
        return Matches(scored[:limit], len(scored), searched)
