"""Bootstrap: the first tool result of every client carries the driver prompt (full, summary or off). A client is
its identity and its `clientInfo.name`, whatever its connections and sessions, for `clients.window_s`
(`gateway.session.Session.first_response`); one that sends no name, or a window of 0: every session."""

import logging
from typing import Literal, Self

from gateway import telemetry
from gateway.config import GatewayConfig
from gateway.hosted.prompts import Prompt, PromptLibrary
from gateway.pipeline import Call, Middleware
from gateway.results import Hint

logger = logging.getLogger(__name__)

Mode = Literal["full", "summary", "off"]
SUMMARY_LIMIT = 1500

_LOOP = """\
1. Tools are named <server>.<tool>; use exact names. gateway.status shows which servers are up.
2. Workflows: think.plan {workflow, params} returns one instruction. Call exactly its `call` with its \
`input`, then think.next {workflow, run_id, step_id, result_snapshot}. Repeat until done: true.
3. Instructions with local.* (read, search, exec, write) or prompt.say are done by you, then reported \
with think.next.
4. Keep result_snapshot under 50 KB: summaries, counts, file:line references, paths to saved files. \
When the gateway says it recorded a step's result, call think.next without result_snapshot.
5. Big results are stored, not dropped: page them with gateway.read_output {id, offset, length}.
6. Lines starting with [gateway] are written for you: they say what to do next.
7. Not every tool may be listed, the gateway's own included (gateway.status, gateway.read_output, \
think.explain, think.state.get, ...): gateway.find_tools {query} searches all; call any by its exact name, or, \
if your client calls only the tools in its own list and it is not there, through gateway.call_tool {name, arguments}."""


def summary(prompt: Prompt, full_text: str) -> str:
    """The compact driver: version, hash, the loop, and where the full text is (≤ 1,500 chars)."""
    head = f"Driver {prompt.version} ({prompt.hash[:19]}…): how to work through this gateway."
    text = f"{head}\n{_LOOP}\nFull text: {full_text}"
    if len(text) > SUMMARY_LIMIT:
        raise ValueError(f"driver summary is {len(text)} chars, over {SUMMARY_LIMIT}")
    return text


class Bootstrap(Middleware):
    name = "bootstrap"

    @classmethod
    def from_config(cls, config: GatewayConfig, *, prompts: PromptLibrary, full_text: str) -> Self:
        return cls(prompts.get(config.bootstrap.driver_version), mode=config.bootstrap.mode, full_text=full_text)

    def __init__(self, prompt: Prompt, *, mode: Mode = "summary", full_text: str) -> None:
        self.mode = mode
        self.prompt = prompt
        self.text = prompt.text if mode == "full" else summary(prompt, full_text)

    async def on_response(self, call: Call) -> None:
        if self.mode == "off" or not await call.session.first_response():
            return
        call.hints.insert(0, Hint("bootstrap", self.text))
        telemetry.event(
            "gateway.bootstrap",
            **{"driver.version": self.prompt.version, "driver.mode": self.mode, "driver.chars": len(self.text)},
        )
        logger.debug("bootstrap: driver %s (%s) sent to session %s", self.prompt.version, self.mode, call.session.key)
