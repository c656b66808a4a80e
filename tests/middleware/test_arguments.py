"""The arguments the page keeps for a caller who chose to see theirs (`middleware/arguments.py`): secret-looking keys
redacted at any depth whatever their case or separators, a long value cut with what was not kept said, nesting
bounded; a choice made reaches the recorder at once."""

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from gateway.config.sections import REDACTED_BY_DEFAULT
from gateway.middleware.arguments import ARGUMENT_BYTES, DEPTH, REDACTED, Keeping, redacted, shown
from gateway.middleware.record import Recorder
from gateway.store.backends import open_stores
from gateway.store.local.calls import LocalCallLog
from tests.services import RedisServer, redis_server, store_config


def test_secret_looking_keys_are_redacted_at_any_depth_ignoring_case_and_separators() -> None:
    given = {
        "query": "open issues",
        "max_tokens": 200,  # ends with "tokens", not "token": kept
        "auth": {"GitHub-Token": "ghp_1", "headers": [{"Authorization": "Bearer x"}, {"X-API-KEY": "k"}]},
        "Password": {"nested": "whole value hidden"},
        "client_secret": "s",
    }
    keys = frozenset({"token", "authorization", "apikey", "password", "secret"})
    assert redacted(given, keys) == {
        "query": "open issues",
        "max_tokens": 200,
        "auth": {"GitHub-Token": REDACTED, "headers": [{"Authorization": REDACTED}, {"X-API-KEY": REDACTED}]},
        "Password": REDACTED,
        "client_secret": REDACTED,
    }


def test_the_default_keys_redact_the_usual_secrets() -> None:
    given = {"api_key": "1", "apiKey": "2", "cookie": "3", "db_password": "4", "credentials": "5", "text": "kept"}
    assert json.loads(shown(given, REDACTED_BY_DEFAULT)) == {**dict.fromkeys(given, REDACTED), "text": "kept"}


def test_arguments_over_the_bound_are_cut_and_say_how_much_was_not_kept() -> None:
    whole = json.dumps({"text": "é" * 10_000}, indent=1, ensure_ascii=False)
    kept, said = shown({"text": "é" * 10_000}, ()).split("\n… (")
    assert len(kept.encode()) <= ARGUMENT_BYTES and whole.startswith(kept)
    assert said == f"{len(whole) - len(kept):,} more characters not kept: the page keeps 4,000 bytes)"


def test_nesting_deeper_than_the_bound_is_replaced_not_recursed_into() -> None:
    deep: object = "bottom"
    for _ in range(5_000):  # deeper than Python's recursion limit
        deep = {"a": deep}
    text = shown(deep, ())
    assert f"nested deeper than {DEPTH} levels" in text and "bottom" not in text


@pytest.mark.anyio
async def test_a_choice_made_reaches_the_recorder_at_once_and_is_undone_as_easily() -> None:
    recorder, log = Recorder(), LocalCallLog()
    keeping = Keeping(recorder, log)
    assert not await keeping.chosen("alice")
    await keeping.choose("alice", True)
    assert recorder.arguments_of == frozenset({"alice"}) and await keeping.chosen("alice")
    await keeping.choose("alice", False)
    assert recorder.arguments_of == frozenset() and not await keeping.chosen("alice")


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.mark.anyio
async def test_a_replica_follows_a_choice_made_on_another(redis: RedisServer, tmp_path: Path) -> None:
    one, other = (open_stores(store_config("redis", redis.url, "follow:", tmp_path)) for _ in range(2))
    try:
        await Keeping(Recorder(), one.calls).choose("alice", True)
        recorder = Recorder()
        async with anyio.create_task_group() as tg:
            await tg.start(Keeping(recorder, other.calls).follow)  # started once it has read the choices
            assert recorder.arguments_of == frozenset({"alice"})
            tg.cancel_scope.cancel()
    finally:
        await one.aclose()
        await other.aclose()
