"""Think's error codes: every failure is a `ThinkError` the server turns into `{"error", "details", "guidance"}`."""

from dataclasses import asdict, dataclass
from typing import Any

from gateway.errors import GatewayError

CODES = frozenset(
    {
        "UNKNOWN_WORKFLOW",
        "YAML_SCHEMA_VIOLATION",
        "INVALID_PARAMS",
        "VALIDATION_FAILED",
        "STATE_CONFLICT",
        "UNKNOWN_STEP",
        "CYCLIC_DEPENDENCY",
        "UNRESOLVED_VAR",
        "UNKNOWN_TOOL",
        "TEMPLATE_RENDER_ERROR",
        "PROMPT_NOT_FOUND",
        "CHECKPOINT_NOT_FOUND",
        "RESET_NOT_ALLOWED",
        "UNKNOWN_RUN",
        "STEP_NOT_READY",
        "STEP_ALREADY_COMPLETED",
        "PAYLOAD_TOO_LARGE",
        "STEP_NOT_UPSTREAM",
        "RETRY_NOT_BEFORE",
    }
)


class ThinkError(GatewayError):
    """A Think failure the model must see: a code from `CODES`, what happened, and what to do next."""

    def __init__(self, code: str, details: Any, guidance: str, **extra: Any) -> None:
        if code not in CODES:
            raise ValueError(f"unknown Think error code {code!r}")
        self.error_code = code
        self.details = details
        self.guidance = guidance
        self.extra = extra
        super().__init__(f"{code}: {details}")

    def body(self) -> dict[str, Any]:
        return {"error": self.error_code, "details": self.details, "guidance": self.guidance, **self.extra}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem in a workflow file: where it is (file and path inside it), what is wrong, how to fix it."""

    error: str
    file: str
    path: str
    message: str
    guidance: str

    def line(self) -> str:
        return f"{self.file}: {self.path}: {self.message}"


def diagnosed(problems: list[Diagnostic]) -> ThinkError:
    """All of a workflow's problems as one error: the first one's code, every problem in `diagnostics`.

    `details` stays a string (the first problem, and how many more), so a client reading only it still
    learns where to look; `diagnostics` lists each with its own file, path and fix."""
    first = problems[0]
    more = f" (and {len(problems) - 1} more problems: see diagnostics)" if len(problems) > 1 else ""
    return ThinkError(first.error, first.line() + more, first.guidance, diagnostics=[asdict(p) for p in problems])
