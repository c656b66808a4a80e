"""How text becomes search terms: a name's or a sentence's words, the stopwords dropped from queries, the
developer vocabulary (synonyms, abbreviations) a term also searches, light stemming, and the text a tool's name and
parameters give the index's columns (`search.py` indexes and ranks what these produce).
"""

import re
from typing import Any

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORDS = re.compile(r"[A-Za-z0-9]+")
_VALUES = re.compile(r"(?<![\w.-])(?:[A-Za-z][A-Za-z0-9]*-\d+|[vV]?\d+(?:[.:/-]\d+)*)(?![\w-])")
"""Values a request carries, not words about a tool: issue keys (PAY-88), numbers, versions (v1.4), dates, times."""
STOPWORDS = frozenset(
    "a an and any are as at be by can could do does for from have i in into is it its of on or please should some "
    "that the their them there this to we will with would you your tool tools".split()
)
"""Words that say nothing about which tool is meant ("do I use a tool to ..."): dropped from queries."""
ASKING = frozenset("who what when where which how me my us our".split())
"""Words that say what kind of answer is wanted (who: a person, when: a time) or whose (me, my: "assigned to me"),
not what it is about. Requests in users' words (expansions) carry them, so a query's "who can take this" meets a
tool's "who can be assigned": they are searched beside a query's other words, never alone (`terms`), and a tool only
they match is no answer (search.py). Once stopwords; chosen on the tune halves (docs/benchmarks.md)."""
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


def unvalued(text: str, named: frozenset[str] = frozenset()) -> str:
    """`text` without its values (`_VALUES`): "log 2 hours on PAY-12" is about logging hours, not about the number 2
    or the word "pay"; a shipped request's example key ("PROJ-5") would otherwise meet every query about PROJ. A value
    that is a word of a tool's name (`named`: "042" of `tool_042`) is kept: there it names the tool."""
    return _VALUES.sub(lambda value: value[0] if value[0].lower() in named else " ", text)


def meant(text: str, named: frozenset[str] = frozenset()) -> str:
    """The words of a query about a tool: without values (but those `named`) and stopwords. The semantic ranker reads
    these; `terms` searches them with their synonyms."""
    return " ".join(w for w in words(unvalued(text, named)) if w not in STOPWORDS)


def terms(text: str, named: frozenset[str] = frozenset()) -> list[str]:
    """A query's search terms: its words about a tool (`meant`), each with its synonyms; none when only `ASKING` words
    are left ("which of the" searches nothing)."""
    found: dict[str, None] = {}
    for word in meant(text, named).split():
        found[word] = None
        found.update(dict.fromkeys(SYNONYMS.get(word, ())))
    return list(found) if any(word not in ASKING for word in found) else []


def any_of(searched: list[str]) -> str:
    """An FTS5 query for the tools with any of the terms. Each term quoted: the user's text never reaches FTS5's query
    syntax. OR ranks by how many terms a tool matches and how rare they are (BM25's idf): what "closest" means here."""
    return " OR ".join(f'"{t}"' for t in searched)


def stem(word: str) -> str:
    """Enough stemming to compare a query's words with a name's (`commits`/`commit`); FTS5 stems the rest."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def content(text: str) -> set[str]:
    """A request's words that a query's terms may meet, stemmed."""
    return {stem(w) for w in words(text) if w not in STOPWORDS}


def name_text(name: str) -> str:
    """A name's words for the index, abbreviations spelled out (`gitlab_list_mrs`: list mrs merge request)."""
    return " ".join(w for word in words(name) for w in (word, *(SYNONYMS[word] if word in ABBREVIATIONS else ())))


def param_text(schema: dict[str, Any]) -> str:
    props = schema.get("properties")
    if not isinstance(props, dict):
        return ""
    parts: list[str] = []
    for name, spec in props.items():
        parts.append(" ".join(words(str(name))))
        if isinstance(spec, dict) and isinstance(spec.get("description"), str):
            parts.append(spec["description"])
    return " ".join(parts)
