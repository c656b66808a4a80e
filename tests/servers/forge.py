"""A local GitLab REST v4 + Jira REST v2 HTTP server for the real mcp-gitlab and mcp-atlassian to talk to.

It answers only the endpoints the shipped workflows' steps reach (`code_review_v1`, `develop_ticket_v1`),
with bodies in the shapes GitLab's and Jira's public API documentation give (merge request, diffs with
the `X-Next-Page` paging headers, discussions, pipelines, notes, approvals, branches; issue, transitions,
comments, remote links). Writes are kept in memory so a later GET sees them. Every request is recorded with
the status it got;
`GET /__requests` returns the record, so a test can check what the servers actually sent.
Anything else is a 404 in the API's own error shape, so a step that reaches an unknown endpoint fails loudly.

    python -m tests.servers.forge --port-file PATH   (from the repository root)
"""

import argparse
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from tests.servers import forge_shapes as shapes


class State:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.base = ""
        self.requests: list[dict[str, Any]] = []
        self.notes: list[dict[str, Any]] = []
        self.branches: dict[str, dict[str, Any]] = {}
        self.mrs: dict[int, dict[str, Any]] = {
            5: shapes.merge_request(5, "Cart: count quantities", "fix/cart-qty", "main")
        }
        self.approved = False
        self.status = {"id": "10000", "name": "To Do"}
        self.comments: list[dict[str, Any]] = []
        self.links: list[dict[str, Any]] = []


Reply = tuple[int, Any, dict[str, str]]
Route = Callable[[State, re.Match[str], dict[str, list[str]], Any], Reply]


def _paged(items: list[Any], query: dict[str, list[str]]) -> Reply:
    per_page = int(query.get("per_page", ["20"])[0])
    page = int(query.get("page", ["1"])[0])
    chunk = items[(page - 1) * per_page : page * per_page]
    pages = max(1, -(-len(items) // per_page))
    headers = {
        "X-Page": str(page),
        "X-Per-Page": str(per_page),
        "X-Total": str(len(items)),
        "X-Total-Pages": str(pages),
    }
    headers["X-Next-Page"] = str(page + 1) if page < pages else ""
    headers["X-Prev-Page"] = str(page - 1) if page > 1 else ""
    return 200, chunk, headers


def _project(raw: str) -> bool:
    return unquote(raw) in (shapes.PROJECT, str(shapes.PROJECT_ID))


def get_mr(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    mr = s.mrs.get(int(m["iid"]))
    return (200, mr, {}) if mr and _project(m["project"]) else (404, {"message": "404 Not found"}, {})


def mr_diffs(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    return _paged(shapes.DIFFS, q)


def mr_discussions(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    return _paged(shapes.DISCUSSIONS, q)


def mr_pipelines(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    return _paged(shapes.PIPELINES, q)


def add_note(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    note = shapes.note(400 + len(s.notes), str((body or {}).get("body", "")), iid=int(m["iid"]))
    note["type"] = None
    note["resolvable"] = False
    s.notes.append(note)
    return 201, note, {}


def approve(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    if s.approved:
        return 401, {"message": "401 Unauthorized"}, {}  # GitLab answers a repeated approval this way
    s.approved = True
    mr = s.mrs[int(m["iid"])]
    keys = ("id", "iid", "project_id", "title", "description", "state", "created_at", "updated_at", "merge_status")
    return (
        201,
        {
            **{k: mr[k] for k in keys},
            "approvals_required": 1,
            "approvals_left": 0,
            "approved_by": [{"user": shapes.USER}],
        },
        {},
    )


def create_branch(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    args = {**{k: v[0] for k, v in q.items()}, **(body or {})}
    name, ref = args.get("branch"), args.get("ref")
    if not name or not ref:
        return 400, {"error": "branch is missing, ref is missing"}, {}
    if name in s.branches:
        return 400, {"message": "Branch already exists"}, {}
    branch = shapes.branch(name)
    s.branches[name] = branch
    return 201, branch, {}


def create_mr(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    args = body or {}
    missing = [k for k in ("source_branch", "target_branch", "title") if not args.get(k)]
    if missing:
        return 400, {"error": f"{', '.join(missing)} is missing"}, {}
    iid = max(s.mrs) + 1
    title = str(args["title"])
    draft = bool(args.get("draft")) or title.lower().startswith(("draft:", "[draft]"))
    mr = shapes.merge_request(
        iid, title, str(args["source_branch"]), str(args["target_branch"]), str(args.get("description", "")), draft
    )
    s.mrs[iid] = mr
    return 201, mr, {}


def get_issue(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    if m["key"] != shapes.ISSUE_KEY:
        return 404, {"errorMessages": ["Issue Does Not Exist"], "errors": {}}, {}
    return 200, shapes.jira_issue(s.base, m["key"], s.status, s.comments), {}


def issue_comments(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    if m["key"] != shapes.ISSUE_KEY:
        return 404, {"errorMessages": ["Issue Does Not Exist"], "errors": {}}, {}
    return 200, {"startAt": 0, "maxResults": 50, "total": len(s.comments), "comments": s.comments}, {}


def fields(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    """GET /rest/api/2/field: the system fields the issue above carries (no custom fields, so no epic link)."""
    return 200, shapes.FIELDS, {}


def search(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    """GET /rest/api/2/search (JQL): mcp-atlassian looks for an Epic to learn the epic fields; there is none."""
    return 200, {"expand": "schema,names", "startAt": 0, "maxResults": 1, "total": 0, "issues": []}, {}


def transitions(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    if body is None:  # GET
        return 200, {"expand": "transitions", "transitions": shapes.TRANSITIONS}, {}
    chosen = next((t for t in shapes.TRANSITIONS if t["id"] == str((body.get("transition") or {}).get("id"))), None)
    if chosen is None:
        return 400, {"errorMessages": ["Transition id is not valid for this issue."], "errors": {}}, {}
    s.status = dict(chosen["to"])
    return 204, None, {}


def add_comment(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    comment = {
        "self": f"{s.base}/rest/api/2/issue/10017/comment/{10100 + len(s.comments)}",
        "id": str(10100 + len(s.comments)),
        "author": {"name": "ada", "displayName": "Ada Lovelace", "active": True},
        "body": str((body or {}).get("body", "")),
        "updateAuthor": {"name": "ada", "displayName": "Ada Lovelace", "active": True},
        "created": "2026-11-20T10:00:00.000+0000",
        "updated": "2026-11-20T10:00:00.000+0000",
    }
    s.comments.append(comment)
    return 201, comment, {}


def remote_link(s: State, m: re.Match[str], q: dict[str, list[str]], body: Any) -> Reply:
    obj = (body or {}).get("object") or {}
    if not obj.get("url") or not obj.get("title"):
        return 400, {"errorMessages": [], "errors": {"object": "url and title are required"}}, {}
    link_id = 10000 + len(s.links)
    s.links.append(body)
    return 201, {"id": link_id, "self": f"{s.base}/rest/api/2/issue/{m['key']}/remotelink/{link_id}"}, {}


MR_PATH = r"/api/v4/projects/(?P<project>[^/]+)/merge_requests/(?P<iid>\d+)"
ISSUE_PATH = r"/rest/api/2/issue/(?P<key>[A-Z][A-Z0-9_]*-\d+)"
ROUTES: list[tuple[str, re.Pattern[str], Route]] = [
    ("GET", re.compile(MR_PATH), get_mr),
    ("GET", re.compile(MR_PATH + "/diffs"), mr_diffs),
    ("GET", re.compile(MR_PATH + "/discussions"), mr_discussions),
    ("GET", re.compile(MR_PATH + "/pipelines"), mr_pipelines),
    ("POST", re.compile(MR_PATH + "/notes"), add_note),
    ("POST", re.compile(MR_PATH + "/approve"), approve),
    ("POST", re.compile(r"/api/v4/projects/(?P<project>[^/]+)/repository/branches"), create_branch),
    ("POST", re.compile(r"/api/v4/projects/(?P<project>[^/]+)/merge_requests"), create_mr),
    ("GET", re.compile(ISSUE_PATH), get_issue),
    ("GET", re.compile(ISSUE_PATH + "/comment"), issue_comments),
    ("GET", re.compile(r"/rest/api/2/field"), fields),
    ("GET", re.compile(r"/rest/api/2/search"), search),
    ("GET", re.compile(ISSUE_PATH + "/transitions"), transitions),
    ("POST", re.compile(ISSUE_PATH + "/transitions"), transitions),
    ("POST", re.compile(ISSUE_PATH + "/comment"), add_comment),
    ("POST", re.compile(ISSUE_PATH + "/remotelink"), remote_link),
]


class Handler(BaseHTTPRequestHandler):
    state: State

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the record is /__requests
        pass

    def _answer(self, status: int, body: Any, headers: dict[str, str]) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if body is not None:
            self.send_header("Content-Type", "application/json;charset=UTF-8")
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self, method: str) -> None:
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body: Any = json.loads(raw) if raw else ({} if method == "POST" else None)
        if parts.path == "/__requests":
            with self.state.lock:
                return self._answer(200, self.state.requests, {})
        query = parse_qs(parts.query)
        with self.state.lock:
            record = {"method": method, "path": parts.path, "query": parts.query, "body": body, "status": 404}
            self.state.requests.append(record)
            for verb, pattern, route in ROUTES:
                match = pattern.fullmatch(parts.path)
                if verb == method and match is not None:
                    status, answer, headers = route(self.state, match, query, body if method == "POST" else None)
                    record["status"] = status
                    return self._answer(status, answer, headers)
        not_found = (
            {"errorMessages": ["Not found"], "errors": {}} if "/rest/" in parts.path else {"message": "404 Not found"}
        )
        self._answer(404, not_found, {})

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", type=Path, required=True)
    args = parser.parse_args()
    Handler.state = State()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Handler.state.base = f"http://127.0.0.1:{server.server_port}"
    tmp = args.port_file.with_suffix(".tmp")
    tmp.write_text(str(server.server_port), encoding="utf-8")
    tmp.replace(args.port_file)  # a reader never sees a half-written port
    server.serve_forever()


if __name__ == "__main__":
    main()
