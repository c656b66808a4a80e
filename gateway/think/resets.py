"""think.reset: clearing a run, rolling it back to a checkpoint, or migrating it to its workflow file's current
version."""

from typing import Any

from gateway.think import checkpoints, retention, runner, tools
from gateway.think.engine import Engine, pin
from gateway.think.errors import ThinkError
from gateway.think.graph import Graph
from gateway.think.runs import spilled
from gateway.think.state import RunState
from gateway.think.views import migrate


class Resets:
    """The reset operation of `gateway.think.ops.Operations`, which has it by inheriting this."""

    engine: Engine

    async def reset(self, owner: str, args: tools.Reset) -> dict[str, Any]:
        workflow, checkpoint = args.workflow, args.checkpoint
        state = await self.engine.run_of(owner, workflow, args.run_id)
        if args.migrate:
            return await self._migrate(owner, state)
        if checkpoint is None:
            if not args.force:
                raise ThinkError(
                    "RESET_NOT_ALLOWED",
                    f"clearing run {state.run_id} deletes its state",
                    "Pass force: true to clear it, or a checkpoint (a completed step id) to roll back.",
                )
            await self.engine.runs.clear(owner, workflow, state.run_id)
            return {"ok": True, "cleared": state.run_id}

        def wants(state: RunState, graph: Graph) -> list[str]:
            """The spills to read: the run's, the chunks of spilled checkpoints when the one named is not in the
            state, and those of the captures the checkpoint had that left the state."""
            found = retention.find_checkpoint(state, checkpoint)
            if found is None:  # its captures are known once its chunk is read: any evicted one may be among them
                return spilled(state) + retention.chunk_ids(state) + list(retention.evicted(state, graph).values())
            return spilled(state) + list(retention.missing(state, graph, found[0]).values())

        def roll_back(state: RunState, graph: Graph) -> tuple[dict[str, Any], bool]:
            found = retention.find_checkpoint(state, checkpoint)
            if found is None:
                names = ", ".join(c.name for c in state.checkpoints) or "none yet"
                earlier = f" and {state.checkpoint_chunks * retention.CHUNK} earlier" if state.checkpoint_chunks else ""
                raise ThinkError(
                    "CHECKPOINT_NOT_FOUND",
                    f"run {state.run_id} has no checkpoint {checkpoint!r} (a checkpoint is a step the run completed)",
                    f"Checkpoints: {names}{earlier}.",
                )
            point, line, chunks = found
            gone = retention.missing(state, graph, point)
            checkpoints.restore(state, point, line, chunks)
            retention.restore_references(state, gone)
            state.log("reset", checkpoint)
            return self.engine.transitions.answer(state, graph, note=f"rolled back to after step {checkpoint}"), True

        answer = await self.engine.runs.update(owner, workflow, state.run_id, roll_back, wants)
        # seed 003 answers `{ok, state}`; `instruction` is where the run continues (the whole answer, as think.next's)
        return {"ok": True, "instruction": answer, "state": answer.get("state")}

    async def _migrate(self, owner: str, state: RunState) -> dict[str, Any]:
        current = await self.engine.graph(state.workflow, state.driver.get("version"))

        def move(state: RunState, graph: Graph) -> tuple[dict[str, Any], bool]:
            changes = migrate(state, current)
            pin(state, current.workflow)
            state.log("migrate", detail=f"to {current.workflow.digest}: {changes}")
            runner.advance(state, current, self.engine.templates)
            answer = self.engine.transitions.answer(state, current, note=f"migrated to {current.workflow.digest}")
            return {"ok": True, "migrated": changes, "instruction": answer, "state": answer.get("state")}, True

        return await self.engine.runs.update(owner, state.workflow, state.run_id, move)
