"""langchain-mcp-adapters with its defaults (pinned in ./langchain.txt, installed into .clients/langchain by
scripts/continuity-clients) calling the gateway over Streamable HTTP: `MultiServerMCPClient` opens a new MCP session
(initialize ... DELETE) for every tool call. Run by that venv's Python:
    langchain_client.py <gateway /mcp url> <bearer token> <calls> [parallel]
Prints one JSON line per call: whether the gateway's driver prompt came with it, and the tool's own text."""

import json
import sys
from typing import Any

import anyio
from langchain_mcp_adapters.client import MultiServerMCPClient


def texts(message: Any) -> list[str]:
    content = message.content
    blocks = content if isinstance(content, list) else [content]
    return [b["text"] if isinstance(b, dict) else str(b) for b in blocks if not isinstance(b, dict) or "text" in b]


async def main(url: str, token: str, calls: int, parallel: bool) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    client = MultiServerMCPClient({"gateway": {"transport": "streamable_http", "url": url, "headers": headers}})
    tools = {tool.name: tool for tool in await client.get_tools()}
    echo = tools["kitchen.echo"]

    answers: dict[int, Any] = {}

    async def call(n: int) -> None:
        call = {"type": "tool_call", "id": f"c{n}", "name": echo.name, "args": {"text": f"l{n}"}}
        answers[n] = await echo.ainvoke(call)

    if parallel:  # all at once: each opens its session at the same time
        async with anyio.create_task_group() as tg:
            for n in range(calls):
                tg.start_soon(call, n)
    else:
        for n in range(calls):
            await call(n)
    for n, answer in sorted(answers.items()):
        found = texts(answer)
        driver = any(t.startswith("[gateway] Driver ") for t in found)
        own = "\n".join(t for t in found if not t.startswith("[gateway] "))
        sys.stdout.write(json.dumps({"label": f"echo{n + 1}", "driver": driver, "text": own}) + "\n")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:] == ["parallel"])
