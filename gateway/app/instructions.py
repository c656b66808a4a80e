"""What `initialize` tells a session: the driver summary in the session's names, then what each server offers."""

from gateway.config import GatewayConfig
from gateway.hosted import server as hosted
from gateway.hosted.prompts import PromptLibrary
from gateway.middleware.bootstrap import summary
from gateway.middleware.exposure.find import CALL_TOOL, FIND_TOOLS
from gateway.middleware.exposure.offers import INSTRUCTIONS_CHARS, offers
from gateway.routing.catalog import Catalog
from gateway.routing.rename import Names, reference
from gateway.think.tools import PROMPT_TOOLS, THINK_TOOLS


def own_names(separator: str, max_length: int) -> Names:
    """The names of the gateway's, Think's and prompt's tools: enough to render the driver summary, which is
    written before any catalog exists."""
    own = [("gateway", t.name) for t in (hosted.STATUS, hosted.READ_OUTPUT, FIND_TOOLS, CALL_TOOL)]
    own += [("think", t.name) for t in THINK_TOOLS] + [("prompt", t.name) for t in PROMPT_TOOLS]
    return Names(((s, o, reference(s, o)) for s, o in own), separator, max_length)


class Instructions:
    """The `instructions` of `initialize`, within Codex's 2,048 characters (it shows them as the namespace's
    description): the driver summary, then what each server of the last settled catalog offers (`offers`)."""

    def __init__(self, prompts: PromptLibrary, *, thinking: bool, config: GatewayConfig) -> None:
        self._prompts = prompts
        self._thinking = thinking
        self._own = own_names(config.namespace.separator, config.namespace.max_name_length)
        self.offered: Catalog | None = None
        """The catalog the instructions describe (None until the servers first settle)."""

    def driver_full_text(self, config: GatewayConfig) -> str:
        """Where the whole driver prompt is read: Think's tool when Think runs, else the prompt resource."""
        version = self._prompts.get(config.bootstrap.driver_version).version
        full_text = f"read the resource gateway://prompts/{version}"
        if self._thinking:
            full_text = f'call think.driver_prompt {{"version": "{version}"}} or {full_text}'
        return full_text

    def text(self, config: GatewayConfig) -> str:
        """Raises:
        PromptNotFound: `bootstrap.driver_version` names no driver prompt."""
        driver = self._prompts.get(config.bootstrap.driver_version)
        text = self._own.text(summary(driver, self.driver_full_text(config)))
        catalog = self.offered
        servers = "" if catalog is None else offers(catalog, INSTRUCTIONS_CHARS - len(text) - 1)
        return f"{text}\n{servers}" if servers else text
