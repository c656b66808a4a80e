"""How the page answers: its security headers (a strict Content-Security-Policy) and a template rendered with them."""

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

HERE = Path(__file__).parent
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",  # not no-referrer: Chromium then sends `Origin: null` with a form POST
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}
_templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))

Handler = Callable[[Request], Awaitable[Response]]


def page(template: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    return HTMLResponse(_templates.get_template(template).render(context), status_code=status, headers=HEADERS)
