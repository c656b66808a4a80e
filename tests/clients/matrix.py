"""The client matrix (issue 22, item 8): which real clients, the cases each runs, and how an observation is judged.

A row is one client (SDK and version, or a bridge) on one transport; its driver (`ts1.mjs`, `ts2.mjs`, `py1.py`,
`py2.py`, each in the client's own environment under `.clients/`) runs every case in one process and prints what it
saw; `judge` decides. The same cases, named as the downstream names them, re-run directly against the downstream
server tell a failure of the gateway from one of the client or the server.
"""

import base64
import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.harness import ROOT
from tests.servers.conformance_content import AUDIO

CLIENTS = ROOT / ".clients"
NODE = str(ROOT / ".node" / "node_modules" / "node" / "bin" / "node")
HERE = ROOT / "tests" / "clients"
VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
SPILL = "gateway://outputs/[0-9a-f]+"
WHO = "ann"


@dataclass(frozen=True)
class Row:
    client: str
    version: str
    transport: str  # how the client reaches the gateway: stdio | http | sse (a bridge: stdio to it, this beyond)
    driver: tuple[str, ...]
    plan: dict[str, Any] = field(default_factory=dict[str, Any], hash=False)
    negotiates: str = ""
    bridge: str | None = None  # "mcp-remote": the driver speaks stdio to it, it speaks `transport` to the gateway

    @property
    def typescript(self) -> bool:
        """A TypeScript SDK client (1.x, 2.x, or mcp-remote, built on 1.x): it handles a notification a microtask
        after reading it and a response at once, so progress read in one chunk with its result is dropped
        (`test_client_matrix.py::test_typescript_clients_drop_progress_they_read_with_its_result`)."""
        return self.driver[-1].endswith(".mjs")

    @property
    def id(self) -> str:
        mode = f"-{self.plan['mode']}" if "mode" in self.plan else ""
        return f"{self.client}-{self.version}{mode}-{self.transport}"


def _ts1(
    version: str, alias: str, negotiates: str, transports: tuple[str, ...] = ("stdio", "http", "sse")
) -> list[Row]:
    driver = (NODE, str(HERE / "ts1.mjs"))
    plan = {"package": str(CLIENTS / "node" / "node_modules" / alias)}
    return [Row("ts-sdk", version, t, driver, plan, negotiates) for t in transports]


def _ts2(mode: str, transports: tuple[str, ...], negotiates: str) -> list[Row]:
    driver = (NODE, str(HERE / "ts2.mjs"))
    plan = {"package": str(CLIENTS / "node" / "node_modules" / "client-2"), "mode": mode}
    return [Row("ts-client", "2.4.0", t, driver, plan, negotiates) for t in transports]


def _py1(version: str, negotiates: str) -> list[Row]:
    driver = (str(CLIENTS / f"mcp-{version}" / "bin" / "python"), str(HERE / "py1.py"))
    return [Row("py-sdk", version, t, driver, {}, negotiates) for t in ("stdio", "http", "sse")]


def _py2(mode: str, transports: tuple[str, ...], negotiates: str) -> list[Row]:
    driver = (sys.executable, str(HERE / "py2.py"))
    return [Row("py-sdk", "2.3.0", t, driver, {"mode": mode}, negotiates) for t in transports]


def _remote(transport: str) -> Row:
    plan = {"package": str(CLIENTS / "node" / "node_modules" / "sdk-1-32")}
    return Row("mcp-remote", "0.15.1", transport, (NODE, str(HERE / "ts1.mjs")), plan, "2025-11-25", "mcp-remote")


ROWS: list[Row] = [
    *_ts1("1.9.0", "sdk-1-9", "2024-11-05", ("stdio", "sse")),  # it predates Streamable HTTP
    *_ts1("1.12.3", "sdk-1-12", "2025-03-26"),
    *_ts1("1.17.5", "sdk-1-17", "2025-06-18"),
    *_ts1("1.32.2", "sdk-1-32", "2025-11-25"),
    *_ts2("legacy", ("stdio", "http", "sse"), "2025-11-25"),
    *_ts2("auto", ("stdio", "http"), "2026-07-28"),
    _remote("http"),
    _remote("sse"),
    *_py1("1.9.4", "2025-03-26"),
    *_py1("1.30.0", "2025-11-25"),
    *_py2("legacy", ("stdio", "http", "sse"), "2025-11-25"),
    *_py2("auto", ("stdio", "http"), "2026-07-28"),
]

Named = Callable[[str, str], str]
"""(server, its own name) -> the name the client uses: `k.echo` through the gateway, `echo` directly."""


def through_gateway(server: str, name: str) -> str:
    return f"{server}+{name}" if "://" in name else f"{server}.{name}"


def direct(server: str, name: str) -> str:
    return name


@dataclass(frozen=True)
class Case:
    name: str
    server: str | None  # the downstream that answers it; None: the gateway's own (no direct re-run)
    steps: list[dict[str, Any]]
    needs_elicitation: bool = False


def cases(n: Named) -> list[Case]:
    """Every case, its tool, resource and prompt names as `n` gives them."""

    def call(server: str, tool: str, **arguments: Any) -> dict[str, Any]:
        return {"op": "call", "tool": n(server, tool), "arguments": arguments}

    return [
        Case("list", "k", [{"op": "tools"}]),
        Case("call", "k", [call("k", "echo", text="hello matrix")]),
        Case("spill+read", None, [call("k", "blob", n=30_000), {"op": "read", "uri_match": SPILL}]),
        Case("image", "c", [call("c", "test_image_content")]),
        Case("audio", "c", [call("c", "test_audio_content")]),
        Case("structured", "k", [call("k", "measure", text="hello")]),
        Case(
            "find+call",
            None,
            [
                {"op": "call", "tool": "gateway.find_tools", "arguments": {"query": "report the length of the text"}},
                {
                    "op": "call",
                    "tool": "gateway.call_tool",
                    "arguments": {"name": "k.measure", "arguments": {"text": "abc"}},
                },
            ],
        ),
        Case("resources", "k", [{"op": "resources"}, {"op": "read", "uri": n("k", "note://hello")}]),
        Case(
            "prompts", "k", [{"op": "prompts"}, {"op": "prompt", "name": n("k", "greet"), "arguments": {"name": WHO}}]
        ),
        Case("progress", "k", [{**call("k", "slow", steps=3, delay_s=0.05)}]),
        Case("cancel", "k", [{**call("k", "hang"), "cancel_after_ms": 500}, call("k", "echo", text="after")]),
        Case("sampling", "c", [call("c", "test_sampling", prompt="matrix")]),
        Case("elicitation", "c", [call("c", "test_elicitation", message="who?")], needs_elicitation=True),
        Case("prompt asks", "c", [{"op": "prompt", "name": n("c", "asking_prompt")}], needs_elicitation=True),
        Case("resource asks", "c", [{"op": "read", "uri": n("c", "test://asking")}]),
    ]


CASE_NAMES = [c.name for c in cases(direct)]


def texts(step: dict[str, Any]) -> str:
    """The text blocks of a step's tool result, the gateway's own hint blocks left out."""
    blocks = (step.get("result") or {}).get("content") or []
    return "\n".join(b["text"] for b in blocks if b.get("type") == "text" and not b["text"].startswith("[gateway] "))


def _read_text(step: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in (step.get("result") or {}).get("contents") or [])


def _at_least(version: str, floor: str) -> bool:
    return version in VERSIONS and VERSIONS.index(version) >= VERSIONS.index(floor)


def judge(case: Case, steps: list[dict[str, Any]], negotiated: str, n: Named, typescript: bool = False) -> str | None:
    """None when the observation is what `case` must give a client of `negotiated` (`typescript`: a TypeScript
    SDK client, `Row.typescript`); else what is wrong."""
    errors = [str(s["error"]) for s in steps if "error" in s]
    if errors:
        return errors[0]
    if len(steps) < len(case.steps):
        return f"only {len(steps)} of {len(case.steps)} steps ran"
    first, last = steps[0], steps[-1]
    match case.name:
        case "list":
            wanted = {n("k", "echo"), n("k", "measure")} if case.server == "k" else set()
            missing = wanted - set(first["names"])
            return f"tools/list lacks {sorted(missing)}" if missing else None
        case "call":
            return _equal(texts(first), "hello matrix")
        case "spill+read":
            link = re.search(SPILL, json.dumps(first))
            kinds = {b.get("type") for b in first["result"].get("content", [])}
            if link is None:
                return f"no {SPILL} in the spilled result: {json.dumps(first)[:300]}"
            if ("resource_link" in kinds) != _at_least(negotiated, "2025-06-18"):
                return f"content types {sorted(kinds)} at {negotiated}: resource_link exists from 2025-06-18 on"
            page = _read_text(last)
            return None if "x" * 1000 in page and "of 30,000" in page else f"read gave {page[:200]!r}"
        case "image":
            images = [b for b in first["result"].get("content", []) if b.get("type") == "image"]
            ok = images and images[0].get("mimeType") == "image/png" and images[0].get("data")
            return None if ok else f"no image/png block: {json.dumps(first)[:300]}"
        case "audio":
            blocks = first["result"].get("content", [])
            if _at_least(negotiated, "2025-03-26"):
                audio = [b for b in blocks if b.get("type") == "audio"]
                ok = audio and audio[0].get("mimeType") == "audio/wav" and audio[0].get("data")
                return None if ok else f"no audio/wav block: {json.dumps(first)[:300]}"
            size = len(base64.b64decode(AUDIO))
            told = f"[audio/wav audio, {size} bytes, not shown: protocol {negotiated} has no audio content"
            said = all(b.get("type") == "text" for b in blocks) and told in texts(first)
            return None if said else f"audio at {negotiated} not told as text ({told!r}): {json.dumps(blocks)[:300]}"
        case "structured":
            structured = first["result"].get("structuredContent")
            if _at_least(negotiated, "2025-06-18"):
                return _equal(structured, {"len": 5})
            if structured is not None:
                return f"structuredContent sent at {negotiated}, which has none"
            return _equal(texts(first), "received 5 chars")
        case "find+call":
            if "k.measure" not in texts(first):
                return f"find_tools did not find k.measure: {texts(first)[:300]!r}"
            return _equal(texts(last), "received 3 chars")
        case "resources":
            if n("k", "note://hello") not in first["uris"]:
                return f"resources/list lacks {n('k', 'note://hello')}: {first['uris']}"
            return _equal(_read_text(last), "hello from k")
        case "prompts":
            if n("k", "greet") not in first["names"]:
                return f"prompts/list lacks {n('k', 'greet')}: {first['names']}"
            return _equal(last["result"]["messages"][0]["content"].get("text"), f"Hello, {WHO}!")
        case "progress":
            if texts(first) != "slow done":
                return _equal(texts(first), "slow done")
            # The last step must arrive before the result (a client drops later ones). A TypeScript client also
            # drops the steps it reads in one chunk with the result: a busy machine delivers them so now and then,
            # with or without a gateway between (mcp-remote: 2 of 180 calls straight to the server); in order, then.
            heard = first["progress"]
            if heard[-1:] == [3] or (typescript and heard == sorted(set(heard)) and set(heard) <= {1, 2, 3}):
                return None
            return f"progress seen {heard}, wanted ... 3"
        case "cancel":
            if not first.get("cancelled"):
                return f"the hanging call answered: {json.dumps(first)[:200]}"
            return _equal(texts(last), "after")
        case "sampling":
            return _equal(texts(first), f"LLM response: {WHO}")
        case "elicitation":
            return None if f'"response": "{WHO}"' in texts(first) else f"elicitation result {texts(first)[:300]!r}"
        case "prompt asks":
            return _equal(first["result"]["messages"][0]["content"].get("text"), f"Hello, {WHO}!")
        case "resource asks":
            return _equal(_read_text(first), f"sampled: {WHO}")
    return f"no judge for case {case.name!r}"


REFUSED = "did not declare the elicitation capability"


def refused_clearly(steps: list[dict[str, Any]]) -> str | None:
    """A client that cannot answer an elicitation is told why (the gateway's words), in the result or the error."""
    said = json.dumps(steps)
    return None if REFUSED in said else f"no {REFUSED!r} in {said[:300]}"


def _equal(seen: Any, wanted: Any) -> str | None:
    return None if seen == wanted else f"got {seen!r}, wanted {wanted!r}"
