"""The driver-prompt library: `prompts/prompts.yml` indexes versioned markdown files; lookup by version, sha256 hash."""

import hashlib
from dataclasses import dataclass
from pathlib import Path

from gateway.config.bundled import shipped
from gateway.config.reading import FastLoader, read_yaml
from gateway.errors import GatewayError

DEFAULT_DIR = shipped("prompts")


class PromptNotFound(GatewayError):
    error_code = "PROMPT_NOT_FOUND"

    def __init__(self, version: str, known: list[str]) -> None:
        self.version = version
        super().__init__(f"No driver prompt {version!r}. Known versions: {', '.join(known) or 'none'}.")


@dataclass(frozen=True, slots=True)
class Prompt:
    version: str
    text: str

    @property
    def hash(self) -> str:
        return "sha256:" + hashlib.sha256(self.text.encode()).hexdigest()


class PromptLibrary:
    """Loaded once; the files are small and never edited in place (a new version is a new file)."""

    def __init__(self, directory: Path = DEFAULT_DIR) -> None:
        index = read_yaml(directory / "prompts.yml", FastLoader)
        self.current: str = index["current"]
        self._prompts = {
            version: Prompt(version, (directory / entry["file"]).read_text(encoding="utf-8"))
            for version, entry in index["versions"].items()
        }
        if self.current not in self._prompts:
            raise ValueError(f"{directory / 'prompts.yml'}: current version {self.current!r} is not listed")

    @property
    def versions(self) -> list[str]:
        return list(self._prompts)

    def get(self, version: str | None = None) -> Prompt:
        """The prompt of `version` (default: current).

        Raises:
            PromptNotFound: no such version.
        """
        prompt = self._prompts.get(version or self.current)
        if prompt is None:
            raise PromptNotFound(version or "", self.versions)
        return prompt

    def by_hash(self, digest: str) -> Prompt:
        for prompt in self._prompts.values():
            if prompt.hash == digest or prompt.hash.removeprefix("sha256:") == digest:
                return prompt
        raise PromptNotFound(digest, self.versions)
