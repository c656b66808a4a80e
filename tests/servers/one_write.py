"""A stdio MCP server (raw JSON lines) whose `tools/call` writes three progress notifications and the result in one
write, as a busy peer's buffered writes reach a client in one read: what a client does with progress it reads
together with the result (`test_client_matrix.py::test_typescript_clients_drop_progress_they_read_with_its_result`).
"""

import json
import os
import sys
from typing import Any


def write(*messages: dict[str, Any]) -> None:
    os.write(1, b"".join(json.dumps(m).encode() + b"\n" for m in messages))


def answer(message: dict[str, Any]) -> None:
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        info = {"name": "one-write", "version": "1"}
        result = {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": info}
    elif method == "tools/list":
        result = {"tools": [{"name": "slow", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        token = params["_meta"]["progressToken"]
        steps = [{"progressToken": token, "progress": i, "total": 3} for i in (1, 2, 3)]
        done = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": "slow done"}]}}
        write(*({"jsonrpc": "2.0", "method": "notifications/progress", "params": p} for p in steps), done)
        return
    elif "id" in message:
        result = {}
    else:
        return  # a notification
    write({"jsonrpc": "2.0", "id": message["id"], "result": result})


for line in sys.stdin:
    answer(json.loads(line))
