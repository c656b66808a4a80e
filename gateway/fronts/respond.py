"""The one ASGI JSON responder of the HTTP front: the lanes' answers, the body limit's refusal and the bearer
challenge all leave through `respond_json`, so status, headers and big bodies are handled one way."""

import json
from collections.abc import Sequence
from typing import Any

from starlette.types import Send

from adapters import jsonwire

Headers = Sequence[tuple[bytes, bytes]]


async def respond_json(send: Send, message: Any, status: int = 200, headers: Headers = ()) -> None:
    """`message` as a JSON response (None: an empty body): in one piece when small, with its length; a big one in
    slices (chunked encoding), so the front never holds a second whole copy of a result."""
    raw = [(b"content-type", b"application/json"), *headers]
    if message is None or jsonwire.text_size(message) <= jsonwire.STREAM_FROM:
        body = b"" if message is None else json.dumps(message, separators=(",", ":")).encode()
        raw.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})
        return
    await send({"type": "http.response.start", "status": status, "headers": raw})
    for piece in jsonwire.slices(message):
        await send({"type": "http.response.body", "body": piece, "more_body": True})
    await send({"type": "http.response.body", "body": b""})
