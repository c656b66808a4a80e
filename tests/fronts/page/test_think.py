"""The Think tab over HTTP on a real gateway: each workflow's graph drawn with its edges, the viewer's runs with
each step's status on the graph, and one run opened with its captures, history and replay check (identical on
the unchanged file, the differing step once the file changed); another identity's run is not found."""

import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.fronts.test_page import ALICE, BOB, get
from tests.harness import http_client, http_gateway, kitchen, write_config
from tests.system.test_page_browser import think_run
from tests.think.harness import FIXTURES

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def run_shown(folder: Path) -> AsyncIterator[tuple[str, Path]]:
    """Alice's loop_v1 run, driven to its foreach's first item; the workflow file a copy the test may change."""
    flows = folder / "workflows"
    shutil.copytree(FIXTURES, flows)
    tokens = [{"name": "alice", "token": ALICE, "groups": ["ops"]}, {"name": "bob", "token": BOB, "groups": ["dev"]}]
    config = write_config(
        folder,
        {"k": kitchen("k")},
        auth={"tokens": tokens, "admin_groups": ["ops"]},
        think={"state_dir": str(folder / "think"), "workflows_dirs": [str(flows)]},
    )
    async with http_gateway(config) as url:
        async with http_client(url, headers={"authorization": f"Bearer {ALICE}"}) as client:
            await think_run(client)
        yield url, flows / "loop_v1.yaml"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module-scoped: `base` is


@pytest.fixture(scope="module")
async def base(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[str, Path]]:
    """`run_shown`, one gateway for the tests that only look."""
    async with run_shown(tmp_path_factory.mktemp("think-page")) as shown:
        yield shown


@pytest.fixture
async def own(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    """`run_shown` for a test that changes the workflow file: its own."""
    async with run_shown(tmp_path) as shown:
        yield shown


def section(text: str, workflow: str) -> str:
    found = re.search(rf'<section class="workflow" data-workflow="{workflow}">(.*?)</section>', text, re.S)
    assert found is not None, text
    return found.group(1)


async def test_each_workflow_is_drawn_with_its_edges_and_each_run_with_its_statuses(base: tuple[str, Path]) -> None:
    url, _ = base
    loop = section((await get(url, "/ui/think")).text, "loop_v1")
    graph, *runs = re.findall(r'<svg class="graph"(.*?)</svg>', loop, re.S)
    # announce reads the foreach's captures in its `when` (an implicit edge); count names announce in deps.
    edges = re.findall(r'data-from="([^"]+)" data-to="([^"]+)"', graph)
    assert sorted(edges) == [("announce", "count"), ("echo_each", "announce")]
    assert re.findall(r'<g class="node" data-step="([^"]+)"', graph) == ["echo_each", "shout", "announce", "count"]
    assert len(runs) == 1
    statuses = dict(re.findall(r'data-step="([^"]+)" data-status="([^"]+)"', runs[0]))
    assert statuses == {
        "echo_each": "expanded",
        "echo_each[0]": "done",
        "echo_each[1]": "pending",
        "shout": "skipped",
        "announce": "pending",
        "count": "pending",
    }
    edges = re.findall(r'class="edge edge-(\w+)" data-from="([^"]+)" data-to="([^"]+)"', runs[0])
    assert ("item", "echo_each", "echo_each[0]") in edges and ("dep", "echo_each", "announce") in edges


async def test_a_run_opened_shows_its_captures_history_and_an_identical_replay(base: tuple[str, Path]) -> None:
    url, _ = base
    run_id = re.findall(r'data-run="([^"]+)"', (await get(url, "/ui/think")).text)[0]
    page = await get(url, f"/ui/think/loop_v1/{run_id}")
    assert page.status_code == 200
    assert 'id="replay" data-identical="true"' in page.text and "Identical" in page.text
    capture = re.search(r'<tr data-capture="([^"]+)"><td>[^<]*</td><td>([^<]*)</td>', page.text)
    assert capture is not None and capture.group(2) == "echo_each[0]"
    history = re.search(r'<table id="history">(.*?)</table>', page.text, re.S)
    assert history is not None and history.group(1).count("<tr>") >= 3  # planned, steps done, skipped...
    assert 'data-step="echo_each[0]" data-status="done"' in page.text
    assert (await get(url, f"/ui/think/loop_v1/{run_id}", token=BOB)).status_code == 404  # alice's run
    assert (await get(url, "/ui/think/loop_v1/no-such-run")).status_code == 404
    assert (await get(url, f"/ui/think/loop_v1/{run_id}", token=None)).status_code == 401


async def test_the_replay_check_names_the_step_that_differs_once_the_file_changed(own: tuple[str, Path]) -> None:
    url, flow = own
    run_id = re.findall(r'data-run="([^"]+)"', (await get(url, "/ui/think")).text)[0]
    flow.write_text(flow.read_text().replace('text: "{{ item }}"', 'text: "file {{ item }}"'))
    page = (await get(url, f"/ui/think/loop_v1/{run_id}")).text
    assert 'data-identical="false"' in page
    differences = re.search(r'<ul id="replay-differences">(.*?)</ul>', page, re.S)
    assert differences is not None and "echo_each[0]: another input" in differences.group(1)
