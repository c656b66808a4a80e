"""The shipped GitLab and Jira workflows run from think.plan to `done` against the real servers.

The real `mcp-gitlab` and `mcp-atlassian` (the example config's `package:` pins, each in its own environment that
the gateway prepared under the test lab's `.envs/`) run behind the gateway as stdio subprocesses, pointed at
`tests/servers/forge.py`: a
local HTTP server answering the GitLab REST v4 and Jira REST v2 endpoints these steps reach, with bodies in
the documented shapes. A scripted model follows every instruction: it makes each gateway call with exactly
the instruction's input, performs the `local.*` steps itself and reports them, and answers the prompt.say
steps that ask for a review or an implementation. Each workflow runs twice: once leaving result_snapshot out
wherever the gateway recorded the step (observed), once echoing every result as a model would (echoed).
What the servers sent to the forge is checked at the end: the note, the approval, the branch, the MR, the
transition, the remote link and the comment carry the values the workflow built from real results.

The forge and the gateway (with both servers) start once for the module.
"""

import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client

from gateway.app.gateway import Gateway
from gateway.app.prepare import environments
from gateway.config import load_config
from gateway.think.observed import unwrapped
from gateway.think.workflow import observable
from tests.harness import LAB_ENVS, ROOT, hints_of, port_file_server, text_of, write_config

pytestmark = pytest.mark.anyio

EXAMPLE = load_config(ROOT / "config" / "examples" / "gitlab-jira.yaml", unset_ok=True)
ENVS = {name: env for name, env in environments(EXAMPLE, LAB_ENVS).items() if name in ("gitlab", "jira")}
if missing := [env for env in ENVS.values() if not env.ready()]:  # a clean clone: ./scripts/setup-lab prepares them
    names = ", ".join(f"{env.spec} ({env.root})" for env in missing)
    pytest.fail(f"{names} not prepared: run ./scripts/setup-lab", pytrace=False)

Answer = dict[str, Any]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def forge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port_file = tmp_path_factory.mktemp("forge") / "port"
    argv = [sys.executable, "-m", "tests.servers.forge", "--port-file", str(port_file)]
    with port_file_server(argv, port_file, cwd=str(ROOT)) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
async def client(forge: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    folder = tmp_path_factory.mktemp("gateway")
    servers = {
        "gitlab": {
            "package": ENVS["gitlab"].spec,
            "env": {"GITLAB_URL": forge, "GITLAB_TOKEN": "glpat-test"},
            "timeout_s": 60,
        },
        "jira": {
            "package": ENVS["jira"].spec,
            "env": {"JIRA_URL": forge, "JIRA_PERSONAL_TOKEN": "jira-test", "HOME": str(folder)},
            "tools": {"include": ["jira_*"]},
            "timeout_s": 60,
        },
    }
    think = {"state_dir": str(folder / "state")}
    # Real servers start slowly on a busy machine: the gateway waits for them instead of failing open at 10 s.
    limits = {"max_inline_bytes": 1_000_000, "startup_wait_s": 100}
    # Search mode: only the way in is listed, so the workflows call hidden tools (`auto` would list some).
    config = write_config(folder, servers, think=think, limits=limits, exposure={"mode": "search"})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GATEWAY_ENVS", str(LAB_ENVS))  # where the gateway finds the prepared environments
        gateway = Gateway(load_config(config))
    with anyio.fail_after(120):
        async with gateway.running(), Client(gateway.front.server, mode="legacy") as connected:
            tools = set((await gateway.registry.catalog()).tools)
            assert {"gitlab.gitlab_get_mr", "jira.jira_get_issue"} <= tools, sorted(tools)[:20]
            assert "gitlab.gitlab_get_mr" not in {t.name for t in (await connected.list_tools()).tools}
            yield connected


def ok(result: types.CallToolResult) -> Answer:
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def drive(client: Client, workflow: str, params: Answer, model: dict[str, Any], *, echo: bool) -> Answer:
    """Follow the run to `done`: gateway calls with the instruction's exact input, client-side steps and the
    prompts that ask for work answered from `model` (step template id -> report, or a callable of the input)."""
    ins = ok(await client.call_tool("think.plan", {"workflow": workflow, "params": params}))
    ins["taken"] = []
    taken: list[str] = []
    with anyio.fail_after(120):
        while not ins["done"]:
            step, template = ins["step_id"], ins["step_id"].split("[")[0]
            taken.append(step)
            ref = {"workflow": workflow, "run_id": ins["run_id"], "step_id": step}
            if observable(ins["call"]):
                result = await client.call_tool(ins["call"], ins["input"])
                assert not result.is_error, (step, text_of(result))
                recorded = any(h.startswith(f"[gateway] Step `{step}` of run") for h in hints_of(result))
                assert recorded == (template not in model), (step, hints_of(result))
                if echo and recorded:
                    view = result.structured_content or {"text": text_of(result)}
                    ref["result_snapshot"] = unwrapped(view)
            if template in model:
                report = model[template]
                ref["result_snapshot"] = report(ins["input"]) if callable(report) else report
            answer = await client.call_tool("think.next", ref)
            ins = ok(answer)
            assert "mismatch" not in ins.get("observation", {}), (step, ins["observation"])
    ins["taken"] = taken
    return ins


async def forge_requests(forge: str, since: int = 0) -> list[Answer]:
    """What the servers sent to the forge (from the `since`-th request on); none reached an unknown endpoint."""
    async with httpx2.AsyncClient() as http:
        requests: list[Answer] = (await http.get(f"{forge}/__requests")).json()[since:]
    assert not [(r["method"], r["path"]) for r in requests if r["status"] == 404]
    return requests


def file_review(instruction: Answer) -> Answer:
    """The model's review of one file: it reads the path from the instruction it was given."""
    text = instruction["text"]
    path = text.split("): ", 1)[1].split(" ", 1)[0].rstrip(".")
    findings = [{"line": 12, "severity": "minor", "message": "Name the rounding rule."}] if "cart.py" in path else []
    return {"path": path, "findings": findings}


REVIEW = {
    "verdict": "approve",
    "summary": "Quantities are counted and the total is rounded; one naming nit.",
    "blocking": 0,
}
CODE_REVIEW_MODEL = {
    "read_guidelines": {"path": "docs/REVIEWING.md", "content": "Every change has a test."},
    "review_file": file_review,
    "summarize": REVIEW,
}


@pytest.mark.parametrize("echo", [False, True], ids=["observed", "echoed"])
async def test_code_review_v1_reviews_posts_and_approves_a_real_merge_request(
    client: Client, forge: str, echo: bool
) -> None:
    params = {
        "project_id": "acme/shop",
        "mr_iid": 5,
        "guidelines_path": "docs/REVIEWING.md",
        "post_comment": True,
        "approve_if_clean": not echo,  # GitLab refuses a second approval by the same user
    }
    before = len(await forge_requests(forge))
    final = await drive(client, "code_review_v1", params, CODE_REVIEW_MODEL, echo=echo)
    reviewed = ["review_file[0]", "review_file[1]"]  # review_file[2] is the deleted file: skipped by its `when`
    fetches = ["fetch_mr", "fetch_changes", "fetch_discussions", "fetch_pipelines", "read_guidelines"]
    assert final["taken"] == [
        "__driver_bootstrap",
        "__driver_announce",
        *fetches,
        *reviewed,
        "summarize",
        "post_note",
        *(["approve"] if not echo else []),
    ]
    assert final["artifacts"] == {
        "mr": "!5 Cart: count quantities",
        "verdict": "approve",
        "summary": REVIEW["summary"],
        "files_reviewed": 2,
        "note_posted": True,
        "approved": not echo,
    }
    sent = [(r["method"], r["path"]) for r in await forge_requests(forge, before)]
    mr = "/api/v4/projects/acme%2Fshop/merge_requests/5"
    assert ("POST", f"{mr}/notes") in sent and (("POST", f"{mr}/approve") in sent) == (not echo)
    note = next(r for r in await forge_requests(forge, before) if r["path"] == f"{mr}/notes")
    assert note["body"]["body"] == f"**Review (approve)**\n\n{REVIEW['summary']}"


IMPLEMENTATION = {
    "summary": "total() multiplies price by quantity and rounds to cents.",
    "files_changed": ["shop/cart.py", "tests/test_cart.py"],
    "commits": ["a1b2c3d SHOP-17: count quantities in the cart total"],
}
DEVELOP_MODEL = {
    "checkout": {"exit_code": 0, "summary": "Switched to a new branch 'feature/shop-17'"},
    "read_guidelines": {"summary": "no CONTRIBUTING.md"},
    "implement": IMPLEMENTATION,
    "run_tests": {"exit_code": 1, "failed_tests": ["tests/test_cart.py::test_total_counts_quantities"]},
    "fix_failures": {"exit_code": 0, "summary": "4 passed"},
    "push": {"exit_code": 0, "summary": "* [new branch] feature/shop-17 -> feature/shop-17"},
}


@pytest.mark.parametrize("echo", [False, True], ids=["observed", "echoed"])
async def test_develop_ticket_v1_takes_a_real_jira_ticket_to_a_real_merge_request(
    client: Client, forge: str, echo: bool
) -> None:
    branch = "feature/shop-17" if not echo else "fix/shop-17"
    params = {
        "issue_key": "SHOP-17",
        "project_id": "acme/shop",
        "repo_path": "/work/shop",
        "transition_id": "21",
        "branch_prefix": branch.removesuffix("shop-17"),
    }
    before = len(await forge_requests(forge))
    final = await drive(client, "develop_ticket_v1", params, DEVELOP_MODEL, echo=echo)
    assert final["taken"] == [
        "__driver_bootstrap",
        "__driver_announce",
        "read_ticket",
        "start_progress",
        "create_branch",
        "checkout",
        "read_guidelines",
        "implement",
        "run_tests",
        "fix_failures",
        "push",
        "open_mr",
        "link_ticket",
        "comment_ticket",
    ]
    sent = {(r["method"], r["path"]): r for r in await forge_requests(forge, before)}
    mr = sent["POST", "/api/v4/projects/acme%2Fshop/merge_requests"]["body"]
    assert mr["source_branch"] == branch and mr["target_branch"] == "main" and mr["draft"] is True
    assert mr["title"] == "SHOP-17: Cart total ignores quantities"
    assert mr["description"].startswith("Closes SHOP-17.\n\ntotal() multiplies price by quantity")
    iid = 6 if not echo else 7
    web_url = f"http://gitlab.test/acme/shop/-/merge_requests/{iid}"
    assert final["artifacts"] == {
        "issue": "SHOP-17: Cart total ignores quantities",
        "branch": branch,
        "pushed": True,
        "merge_request": web_url,
    }
    assert sent["POST", "/api/v4/projects/acme%2Fshop/repository/branches"]["body"] == {"branch": branch, "ref": "main"}
    transition = sent["POST", "/rest/api/2/issue/SHOP-17/transitions"]["body"]
    assert transition["transition"] == {"id": "21"}
    link = sent["POST", "/rest/api/2/issue/SHOP-17/remotelink"]["body"]
    assert link["object"] == {"url": web_url, "title": f"MR !{iid}: SHOP-17: Cart total ignores quantities"}
    comment = sent["POST", "/rest/api/2/issue/SHOP-17/comment"]["body"]["body"]
    assert comment.startswith(f"Merge request [!{iid}|{web_url}] is open (draft): total() multiplies")
