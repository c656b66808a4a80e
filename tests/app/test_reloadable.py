"""What a reload applies and what waits for a restart: the task runner's limits are taken once, at start."""

from gateway.app.reloadable import RESTART_ONLY, split
from gateway.config import GatewayConfig


def test_the_task_runners_limits_wait_for_a_restart_and_keep_their_running_values() -> None:
    old = GatewayConfig()
    new = GatewayConfig.model_validate(
        {"limits": {"task_after_s": 5.0, "task_max_ttl_s": 600.0, "hint_budget_chars": 500}}
    )
    running, applied, restart = split(old, new)
    assert restart == {key: RESTART_ONLY[key] for key in ("limits.task_after_s", "limits.task_max_ttl_s")}
    assert applied == ["limits.hint_budget_chars"]
    assert (running.limits.task_after_s, running.limits.task_max_ttl_s) == (
        old.limits.task_after_s,
        old.limits.task_max_ttl_s,
    )
    assert running.limits.hint_budget_chars == 500
