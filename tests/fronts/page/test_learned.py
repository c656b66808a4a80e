"""The page's `/ui/learned` on a real `gateway serve --http`: what a client's model wrote for a tool through sampling
is shown there per tool, marked as sampled, and only an administrator may remove it; once removed, find_tools no
longer finds the tool by it (DESIGN §14)."""

import re
from pathlib import Path

import anyio
import httpx2
import pytest

from gateway.middleware.exposure.expansions import description_hash, sampled_key
from tests.harness import http_client, http_gateway, kitchen, write_config
from tests.middleware.exposure.test_sampling import MEASURE, QUERY, Model, found, written_for

pytestmark = pytest.mark.anyio

ALICE = "alice-token-0123456789"  # an admin (group ops)
BOB = "bob-token-0123456789ab"  # a developer


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_what_a_clients_model_wrote_is_shown_as_sampled_and_only_an_admin_may_remove_it(
    tmp_path: Path,
) -> None:
    tokens = [{"name": "alice", "token": ALICE, "groups": ["ops"]}, {"name": "bob", "token": BOB, "groups": ["dev"]}]
    config = write_config(
        tmp_path,
        {"k": kitchen("k"), "j": kitchen("j")},  # 20 tools: two sampling requests
        auth={"tokens": tokens, "admin_groups": ["ops"]},
        think={"state_dir": str(tmp_path / "think")},
        exposure={"sampled_expansions": True},
    )
    model = Model()
    async with (
        http_gateway(config) as url,
        http_client(url, mode="legacy", headers=bearer(BOB), sampling_callback=model) as client,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        with anyio.fail_after(60):
            await client.list_tools()
            await model.asked_again.wait()
            [measure] = re.findall(r"^- (\w+)\.measure:", model.prompts[0], re.MULTILINE)  # the first answer's
            key = sampled_key(measure, "measure", description_hash(MEASURE))
            row = f'data-sampled="{key}"'
            assert (await found(client, QUERY))[:1] == [f"{measure}.measure"]
            shown = await http.get(url + "/ui/learned", headers=bearer(BOB))
            assert shown.status_code == 200 and row in shown.text
            assert re.search(
                rf'{re.escape(row)}><td>{measure}</td><td>measure<span class="tag"[^>]*>sampled<', shown.text
            )
            assert all(request in shown.text for request in written_for(MEASURE))
            assert "Remove</button>" not in shown.text  # bob is read-only
            refused = await http.post(url + "/ui/learned/forget", data={"sampled": key}, headers=bearer(BOB))
            assert refused.status_code == 403 and "auth.admin_groups" in refused.text
            assert row in (await http.get(url + "/ui/learned", headers=bearer(ALICE))).text
            done = await http.post(url + "/ui/learned/forget", data={"sampled": key}, headers=bearer(ALICE))
            assert done.status_code == 303 and done.headers["location"] == "/ui/learned"
            assert row not in (await http.get(url + "/ui/learned", headers=bearer(ALICE))).text
            assert (await found(client, QUERY))[:1] != [f"{measure}.measure"]
