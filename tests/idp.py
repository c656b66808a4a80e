"""A local identity provider for tests: a real HTTP server publishing a JWKS, and tokens signed with its keys."""

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

ISSUER = "https://idp.test"
AUDIENCE = "http://127.0.0.1/mcp"


class IdentityProvider:
    """Signing keys by kid; `jwks_url` serves the public halves of the published ones, counting the fetches.

    The endpoint can misbehave as real ones do: answer an error `status`, wait for `hold` to be set before
    answering (slower than any timeout), pad its answer with `padding` bytes, or send an `endless` one
    (no declared length)."""

    def __init__(self) -> None:
        self.keys: dict[str, tuple[str, Any]] = {}
        self.published: set[str] = set()
        self.fetches = 0
        self.jwks_url = ""
        self.status = 200
        self.hold: threading.Event | None = None
        self.padding = 0
        self.endless = False
        self.add_key("rsa-1", "RS256")
        self.add_key("ec-1", "ES256")

    def add_key(self, kid: str, alg: str, *, publish: bool = True) -> None:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048) if alg.startswith(("RS", "PS")) else None
        self.keys[kid] = (alg, key if key is not None else ec.generate_private_key(ec.SECP256R1()))
        if publish:
            self.published.add(kid)

    def jwks(self) -> dict[str, Any]:
        out = []
        for kid in sorted(self.published):
            alg, key = self.keys[kid]
            algorithm = RSAAlgorithm if alg.startswith(("RS", "PS")) else ECAlgorithm
            jwk = json.loads(algorithm.to_jwk(key.public_key()))
            out.append({**jwk, "kid": kid, "alg": alg, "use": "sig"})
        return {"keys": out}

    def token(self, sub: str | None = "alice", *, kid: str = "rsa-1", ttl_s: float = 600, **claims: Any) -> str:
        """A token for `sub`, valid for this gateway; `claims` override or add (`aud=...`, `exp=...`)."""
        alg, key = self.keys[kid]
        now = int(time.time())
        payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + int(ttl_s), **claims}
        payload = {k: v for k, v in payload.items() if v is not None}
        return jwt.encode(payload, key, algorithm=alg, headers={"kid": kid})


@contextmanager
def serving(idp: IdentityProvider) -> Iterator[IdentityProvider]:
    """Serve `idp.jwks()` at `idp.jwks_url` (a thread: the gateway under test fetches it like a real issuer)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            idp.fetches += 1
            if idp.hold is not None:
                idp.hold.wait()
            if idp.status != 200:
                self.send_error(idp.status)
                return
            body = json.dumps(idp.jwks() | {"padding": "x" * idp.padding}).encode()
            try:  # the gateway may hang up first (it read enough, or gave up waiting)
                self.send_response(200)
                self.send_header("content-type", "application/json")
                if not idp.endless:
                    self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[:-2] if idp.endless else body)
                while idp.endless:  # a padding string that never ends
                    self.wfile.write(b"x" * 65536)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    idp.jwks_url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    try:
        yield idp
    finally:
        if idp.hold is not None:
            idp.hold.set()
        server.shutdown()
        server.server_close()
        thread.join()


def unsigned(sub: str = "alice") -> str:
    """An `alg: none` token with otherwise valid claims."""
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 600}
    return jwt.encode(claims, "", algorithm="none")


def tampered(token: str, **claims: Any) -> str:
    """The same signature over a payload with `claims` changed."""
    header, payload, signature = token.split(".")
    decoded = json.loads(jwt.utils.base64url_decode(payload)) | claims
    forged = jwt.utils.base64url_encode(json.dumps(decoded).encode()).decode()
    return f"{header}.{forged}.{signature}"
