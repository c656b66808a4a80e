"""A misbehaving stdio MCP server for the fault-injection suite: one fault per tool, written by hand on the wire.

No SDK: the faults (answers the SDK would never send, a closed stdout, a handshake that never ends)
are bytes this server writes itself. It speaks the handshake era (2025-11-25) and refuses
`server/discover`, so an `auto` client falls back to `initialize`.

Tools (each does exactly one thing wrong, or nothing wrong):
  echo {text}                 answers normally
  slow_echo {text, delay_s}   answers normally after delay_s (another call can run meanwhile)
  pid                         answers with the process id
  server_error {code}         a JSON-RPC error, -32000 by default (an ordinary server error, not a lost connection)
  error_result                an isError result (the tool failed, the protocol did not)
  oversized {n}               an answer line of about n bytes
  null_result                 `"result": null`
  deep_result {depth}         content nested `depth` levels deep
  garbage_then_echo {text}    a line that is not JSON, then the real answer
  stray_then_echo {text}      an answer to an id nobody asked, then the real answer
  close_stdout                closes stdout (every copy this process holds) and stays alive
  exit                        exits mid-call with code 3
  hang                        never answers
  flood {count, log}          sends `count` tools/list_changed notifications (with `log`: log messages), then answers

Options: --no-handshake (read everything, answer nothing), --handshake-delay S (answer `initialize`
S seconds late), --bad-tools (the listing also holds a tool whose inputSchema is a string schema, one
with no inputSchema at all and one without a name), --bad-resources (it offers resources, and lists one: without
a URI, named `<$OWNER>-draft`, as a per-user server's process would list its user's own).
"""

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

PROTOCOL = "2025-11-25"
OBJ: dict[str, Any] = {"type": "object", "properties": {}}


def tool(name: str, description: str, **props: Any) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object", "properties": props}}


TOOLS = [
    tool("echo", "Return the text unchanged.", text={"type": "string"}),
    tool("slow_echo", "Return the text after delay_s.", text={"type": "string"}, delay_s={"type": "number"}),
    tool("pid", "Return the process id."),
    tool("server_error", "Answer with JSON-RPC error `code` (default -32000).", code={"type": "integer"}),
    tool("error_result", "Answer with an isError result."),
    tool("oversized", "Answer with a line of about n bytes.", n={"type": "integer"}),
    tool("null_result", "Answer with result null."),
    tool("deep_result", "Answer with content nested depth levels deep.", depth={"type": "integer"}),
    tool("garbage_then_echo", "Write a non-JSON line, then answer.", text={"type": "string"}),
    tool("stray_then_echo", "Answer an unknown id, then answer.", text={"type": "string"}),
    tool("close_stdout", "Close stdout and stay alive."),
    tool("exit", "Exit mid-call."),
    tool("hang", "Never answer."),
    tool(
        "flood", "Send count list changes (or logs), then answer.", count={"type": "integer"}, log={"type": "boolean"}
    ),
]
BAD_TOOLS = [
    {"name": "string_schema", "description": "inputSchema is not an object schema.", "inputSchema": {"type": "string"}},
    {"name": "no_schema", "description": "No inputSchema at all."},
    {"description": "No name.", "inputSchema": {"type": "object"}},
]


class Faulty:
    def __init__(self, bad_tools: bool, handshake_delay: float, no_handshake: bool, bad_resources: bool) -> None:
        self.tools = TOOLS + (BAD_TOOLS if bad_tools else [])
        self.resources = [{"name": f"{os.environ.get('OWNER')}-draft"}] if bad_resources else None
        self.handshake_delay = handshake_delay
        self.no_handshake = no_handshake
        self.lock = threading.Lock()

    def write(self, line: bytes) -> None:
        with self.lock:
            os.write(1, line + b"\n")

    def answer(self, request_id: Any, result: Any) -> None:
        self.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode())

    def error(self, request_id: Any, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        self.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode())

    def handle(self, message: dict[str, Any]) -> None:
        method, request_id = message.get("method"), message.get("id")
        if request_id is None or self.no_handshake:
            return  # notifications (initialized, cancelled) need no answer
        params = message.get("params") or {}
        if method == "initialize":
            time.sleep(self.handshake_delay)
            capabilities: dict[str, Any] = {"tools": {"listChanged": False}}
            if self.resources is not None:
                capabilities["resources"] = {}
            info = {"name": "faulty", "version": "1.0"}
            self.answer(request_id, {"protocolVersion": PROTOCOL, "capabilities": capabilities, "serverInfo": info})
        elif method == "tools/list":
            self.answer(request_id, {"tools": self.tools})
        elif method == "resources/list" and self.resources is not None:
            self.answer(request_id, {"resources": self.resources})
        elif method == "ping":
            self.answer(request_id, {})
        elif method == "tools/call":
            threading.Thread(target=self.call, args=(request_id, params), daemon=True).start()
        else:
            self.error(request_id, -32601, f"Method not found: {method}")

    def call(self, request_id: Any, params: dict[str, Any]) -> None:
        name, args = params.get("name"), params.get("arguments") or {}

        def text(value: str) -> None:
            self.answer(request_id, {"content": [{"type": "text", "text": value}], "isError": False})

        match name:
            case "echo":
                text(str(args.get("text", "")))
            case "slow_echo":
                time.sleep(float(args.get("delay_s", 1.0)))
                text(str(args.get("text", "")))
            case "pid":
                text(str(os.getpid()))
            case "server_error":
                self.error(request_id, int(args.get("code", -32000)), "backend said no")
            case "error_result":
                self.answer(request_id, {"content": [{"type": "text", "text": "tool failed"}], "isError": True})
            case "oversized":
                text("x" * int(args.get("n", 2 * 1024 * 1024)))
            case "null_result":
                self.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": None}).encode())
            case "deep_result":
                depth = int(args.get("depth", 5000))
                nested = '{"type":"text","text":"deep","_meta":' * depth + "{}" + "}" * depth
                head = json.dumps({"jsonrpc": "2.0", "id": request_id})[:-1]
                self.write(f'{head},"result":{{"content":[{nested}]}}}}'.encode())
            case "garbage_then_echo":
                self.write(b"this is not JSON")
                text(str(args.get("text", "")))
            case "stray_then_echo":
                self.answer(987654, {"content": [{"type": "text", "text": "stray"}]})
                text(str(args.get("text", "")))
            case "close_stdout":
                with self.lock:
                    os.close(1)
                time.sleep(3600)
            case "exit":
                os._exit(3)
            case "hang":
                time.sleep(3600)
            case "flood":
                count = int(args.get("count", 1000))
                changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
                logged = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
                line = json.dumps(logged if args.get("log") else changed).encode()
                for _ in range(count):
                    self.write(line)
                text(f"flooded {count}")
            case _:
                self.error(request_id, -32602, f"Unknown tool: {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bad-tools", action="store_true")
    parser.add_argument("--handshake-delay", type=float, default=0.0)
    parser.add_argument("--no-handshake", action="store_true")
    parser.add_argument("--bad-resources", action="store_true")
    args = parser.parse_args()
    server = Faulty(args.bad_tools, args.handshake_delay, args.no_handshake, args.bad_resources)
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if isinstance(message, dict):
            server.handle(message)


if __name__ == "__main__":
    main()
