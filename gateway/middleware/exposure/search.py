"""The index behind `gateway.find_tools`: SQLite FTS5 with `bm25()` field weights over the catalog's tools.

Why FTS5: it ships with Python's `sqlite3` (no new dependency, no hand-written scorer), its `bm25()` is
Okapi BM25 with a weight per column, its `porter` tokenizer stems ("requests" finds "request"), and a
query over 1,000 tools takes well under a millisecond. The index is rebuilt whole for a new catalog (some
30 ms at 1,000 tools; the exposure builds it at that catalog's first search), never patched.

Names are split before indexing (`vocabulary.py`: `_ . - /` and camelCase, `getMergeRequest` → `get merge request`), so
a user's words meet a tool's name. Columns and weights: the name (with its server) counts most, then
the description, then parameter names and their descriptions.

Hybrid: when the embedded model loads (`semantic.py`), a second ranker orders the tools by meaning, and
the two lists are fused by their scores (`LEXICAL_SHARE`); without it, the lexical ranker answers alone.

Expansions (`expansions.py`: requests in users' words, shipped or learned from use) are a fourth column for
the lexical ranker and extra vectors for the semantic one (a tool is as close as its closest text). When the
learned ones change, the index rebuilds itself at its next search.
"""

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import mcp.types as types

from gateway.middleware.exposure.expansions import Expansions, description_hash, sampled_key, shipped_for
from gateway.middleware.exposure.semantic import document, embedder, warm
from gateway.middleware.exposure.vocabulary import (
    ASKING,
    STOPWORDS,
    any_of,
    content,
    meant,
    name_text,
    param_text,
    stem,
    terms,
    unvalued,
    words,
)

if TYPE_CHECKING:
    from gateway.middleware.exposure.vectors import SemanticIndex

WEIGHTS = (10.0, 1.0, 1.0, 2.0)
"""bm25() weights of the columns (name, description, params, expansions): the name is the strongest evidence; a
request in users' words (expansions) counts twice a description's words (chosen on the tune halves)."""
MAX_QUERY_CHARS = 1_000
LEXICAL_SHARE = 0.6
"""Hybrid fusion: a tool scores LEXICAL_SHARE × its lexical score over the best one's, plus the rest × its cosine over
the best cosine (each ranker's scores divided by its best: the two scales meet at 1). Chosen on the tune halves
and the context-economy set (128 queries): against reciprocal rank fusion (k = 60, which ranks by position only,
so a tool that only one ranker finds strongly fell behind ones both found weakly), 7 more at recall@1, one more
at recall@10, none fewer at recall@5; shares of 0.4 to 0.7 are within two queries of each other
(docs/benchmarks.md)."""


@dataclass(frozen=True, slots=True)
class Hit:
    name: str
    server: str
    tool: types.Tool
    score: float
    """-bm25() (lexical only) or the fused score ×100 (hybrid): higher is better; comparable within one answer."""


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
    """One in-memory FTS5 table of (exposed name, server, tool), and their embeddings when the model loads;
    `build` replaces both. `semantic=False` keeps the lexical ranker alone, `expanded=False` indexes no expansions
    (the bench compares them); the gateway sets `expansions` to its own (with the store of learned ones)."""

    def __init__(self, *, semantic: bool = True, lexical: bool = True, expanded: bool = True) -> None:
        self._wants_semantic, self._lexical, self._expanded = semantic, lexical, expanded
        self.expansions = Expansions()
        self._built_at = -1
        """The `expansions.version` the index was built with."""
        self._semantic: SemanticIndex | None = None
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE tools USING fts5(name, description, params, expansions, tokenize='porter unicode61')"
        )
        self._rows: list[tuple[str, str, types.Tool]] = []
        self._named: frozenset[str] = frozenset()  # the words of the tools' names: a value among them names one
        self._names: list[set[str]] = []
        self._phrases: list[list[set[str]]] = []
        """Each tool's expansions as sets of stemmed content words (what a query may spell out, as a name)."""
        self._sampled_keys: list[str] = []
        """Each tool's key of sampled expansions (`expansions.sampled_key`)."""
        self._shipped: list[list[str]] = []
        """Each tool's pack entry (looked up once per build: a description's hash is not free at 1,000 tools)."""
        self._extra: list[list[str]] = []
        """Each tool's expansions as indexed."""
        self._documents: list[str] = []
        """Each tool's embedded document (name and description), for a semantic rebuild after a lesson."""

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def rankers(self) -> list[str]:
        """The rankers that answer (`gateway tools --find` and gateway.status say them): the semantic one when it is
        wanted and its model loads (asking loads it, once per process)."""
        meaning = self._semantic is not None or (self._wants_semantic and embedder() is not None)
        return ["lexical"] * self._lexical + ["semantic"] * meaning

    def warm(self) -> None:
        """Load the semantic ranker's model in the background, when it is wanted and not loaded (`semantic.warm`)."""
        if self._wants_semantic and self._semantic is None:
            warm()

    def build(self, entries: Iterable[tuple[str, str, types.Tool]], originals: list[str] | None = None) -> None:
        """Index (exposed name, server, tool) triples, replacing what was there; `originals`: each tool's name on its
        server, in order (what its pack entry and sampled expansions are kept by; default: the tool's name)."""
        self._rows = list(entries)
        self._built_at = self.expansions.version
        own = originals or [tool.name for _n, _s, tool in self._rows]
        digests = [description_hash(tool.description or "") for _n, _s, tool in self._rows]
        self._shipped = [
            list(shipped_for(original, digest)) if self._expanded else []
            for original, digest in zip(own, digests, strict=True)
        ]
        self._sampled_keys = [
            sampled_key(srv, original, digest)
            for (_n, srv, _t), original, digest in zip(self._rows, own, digests, strict=True)
        ]
        self._extra = extra = self._expansions()
        self._names = [
            {stem(w) for w in words(tool.name) if w not in STOPWORDS} - {srv} for _n, srv, tool in self._rows
        ]
        self._named = frozenset(w for name, _s, _t in self._rows for w in words(name))
        self._phrases = [[content(request) for request in more] for more in extra]
        with self._db:
            self._db.execute("DELETE FROM tools")
            self._db.executemany(
                "INSERT INTO tools(rowid, name, description, params, expansions) VALUES (?, ?, ?, ?, ?)",
                (
                    (i, name_text(name), tool.description or "", param_text(tool.input_schema), " \n".join(more))
                    for i, ((name, _server, tool), more) in enumerate(zip(self._rows, extra, strict=True))
                ),
            )
        if self._wants_semantic and self._semantic is None and (model := embedder()) is not None:
            self._semantic = model.index()  # loaded at the first build, once per process
        self._documents = [document(words(t.name), t.description or "") for _n, _s, t in self._rows]
        if self._semantic is not None:
            self._semantic.build(self._documents, extra)

    def _expansions(self) -> list[list[str]]:
        """Each tool's shipped expansions (hashed at the build), else what a client's model wrote for it, then what
        was learned for it (`Expansions.of`, with the hashes of the build); without their values, as a query is."""
        if not self._expanded:
            return [[] for _ in self._rows]
        learned, sampled = self.expansions.learned, self.expansions.sampled
        out: list[list[str]] = []
        for shipped, key, (name, _s, _t) in zip(self._shipped, self._sampled_keys, self._rows, strict=True):
            own = shipped or sampled.get(key, [])
            out.append(list(dict.fromkeys([*own, *learned[name]])) if name in learned else own)
        return [[unvalued(request) for request in more] for more in out]

    def _relearn(self) -> None:
        """Take what was learned since the build: only the tools whose expansions changed are written again, and only
        new texts are embedded (a full build at 1,000 tools costs ~200 ms; this some milliseconds)."""
        self._built_at = self.expansions.version
        extra = self._expansions()
        changed = [row for row, (old, new) in enumerate(zip(self._extra, extra, strict=True)) if old != new]
        if not changed:
            return
        self._extra = extra
        with self._db:
            self._db.executemany(
                "UPDATE tools SET expansions = ? WHERE rowid = ?", ((" \n".join(extra[row]), row) for row in changed)
            )
        for row in changed:
            self._phrases[row] = [content(request) for request in extra[row]]
        if self._semantic is not None:
            self._semantic.build(self._documents, extra)

    def search(self, query: str, *, limit: int, server: str | None = None, visible: Visible | None = None) -> Matches:
        """The best `limit` tools for `query`, best first; `server` keeps one namespace, `visible` the allowed.

        Raises:
            ValueError: the query is longer than MAX_QUERY_CHARS (the caller reports it).
        """
        if len(query) > MAX_QUERY_CHARS:
            raise ValueError(f"query is {len(query):,} characters; the limit is {MAX_QUERY_CHARS:,}")
        searched = terms(query, self._named)
        if not searched:
            return Matches([], 0, [])
        if self._expanded and self._built_at != self.expansions.version:
            self._relearn()

        def kept(row: int) -> bool:
            name, srv, _tool = self._rows[row]
            return (server is None or srv == server) and (visible is None or visible(name, srv))

        lexical = [(row, score) for row, score in self._lexical_ranked(searched) if kept(row)]
        if self._semantic is None:
            hits = [self._hit(row, score) for row, score in lexical]
            return Matches(hits[:limit], len(hits), searched)
        semantic = [(row, score) for row, score in self._semantic.ranked(meant(query, self._named)) if kept(row)]
        fused: dict[int, float] = {}
        for share, ranked in ((LEXICAL_SHARE, lexical), (1 - LEXICAL_SHARE, semantic)):
            best = ranked[0][1] if ranked else 0.0
            for row, score in ranked if best > 0 else ():
                fused[row] = fused.get(row, 0.0) + share * score / best
        ordered = sorted(fused.items(), key=lambda item: -item[1])
        return Matches([self._hit(row, 100 * score) for row, score in ordered[:limit]], len(ordered), searched)

    def _hit(self, row: int, score: float) -> Hit:
        name, srv, tool = self._rows[row]
        return Hit(name, srv, tool, round(score, 3))

    def _lexical_ranked(self, searched: list[str]) -> list[tuple[int, float]]:
        """(row, score) of every tool matching a term, best first; empty when the lexical ranker is off."""
        if not self._lexical:
            return []
        rows = self._db.execute(
            "SELECT rowid, bm25(tools, ?, ?, ?, ?) AS rank FROM tools WHERE tools MATCH ? ORDER BY rank",
            (*WEIGHTS, any_of(searched)),
        ).fetchall()
        if len(topical := [t for t in searched if t not in ASKING]) < len(searched):  # never empty (`terms`)
            # A tool that only a question word ("who") meets is no answer.
            about = set(self._db.execute("SELECT rowid FROM tools WHERE tools MATCH ?", (any_of(topical),)))
            rows = [row for row in rows if (row[0],) in about]
        wanted = {stem(t) for t in searched}
        scored: list[tuple[int, float]] = []
        for rowid, rank in rows:
            # BM25 favours rare words wherever they are; a tool whose own name the query spells out
            # ("get issue" for jira_get_issue), or one of its requests in users' words, is the better answer,
            # so that coverage scales the score.
            coverage = max(
                (len(own & wanted) / len(own) for own in (self._names[rowid], *self._phrases[rowid]) if own),
                default=0.0,
            )
            scored.append((rowid, -rank * (1.0 + coverage)))
        scored.sort(key=lambda item: -item[1])
        return scored
