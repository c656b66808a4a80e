"""langchain-mcp-adapters (pinned in ./langchain.txt) reading a spilled result: it loads the gateway's tools once and
can call only those, so it reads the stored output through what the notice tells it, if that is a tool it has.
Run by that venv's Python:  langchain_spill.py <gateway /mcp url> <bearer token>
Prints one JSON line: the tools it had, the notice, and what reading the output answered."""

import json
import re
import sys
from typing import Any

import anyio
from langchain_mcp_adapters.client import MultiServerMCPClient

READ_OUTPUT = re.compile(r"gateway\.read_output (\{[^}]*\})")
THROUGH = re.compile(r'gateway\.call_tool (\{"name": "gateway\.read_output", "arguments": \{[^}]*\}\})')


def texts(message: Any) -> list[str]:
    content = message.content
    blocks = content if isinstance(content, list) else [content]
    return [b["text"] if isinstance(b, dict) else str(b) for b in blocks if not isinstance(b, dict) or "text" in b]


async def main(url: str, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    client = MultiServerMCPClient({"gateway": {"transport": "streamable_http", "url": url, "headers": headers}})
    tools = {tool.name: tool for tool in await client.get_tools()}
    spilled = await tools["kitchen.blob"].ainvoke(
        {"type": "tool_call", "id": "b", "name": "kitchen.blob", "args": {"n": 90_000}}
    )
    notice = "\n".join(t for t in texts(spilled) if t.startswith("[gateway] "))
    direct, through = READ_OUTPUT.search(notice), THROUGH.search(notice)
    if "gateway.read_output" in tools and direct:
        name, args = "gateway.read_output", json.loads(direct.group(1))
    elif "gateway.call_tool" in tools and through:
        name, args = "gateway.call_tool", json.loads(through.group(1))
    else:
        name, args = None, None
    page = (
        ""
        if name is None
        else "\n".join(texts(await tools[name].ainvoke({"type": "tool_call", "id": "r", "name": name, "args": args})))
    )
    line = {"label": "spill", "tools": sorted(tools), "notice": notice, "via": name, "page": page[:200]}
    sys.stdout.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
