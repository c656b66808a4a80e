"""Ending a child's whole process group (a stdio server, an installer), so no grandchild outlives it."""

import logging
import os
import signal
from contextlib import suppress

import anyio
from anyio.abc import Process

logger = logging.getLogger(__name__)

# Nothing notifies us when the last member of a process group dies, so we poll for it.
_POLL_S = 0.02


async def kill_group(leader: Process, grace_s: float) -> None:
    """SIGTERM the group `leader` heads, give it `grace_s` to vanish, then SIGKILL what is left.

    Works after the leader has exited too: its group id lives on while any member does.
    """
    pgid = leader.pid
    if not _signal(pgid, signal.SIGTERM):
        return
    with anyio.move_on_after(grace_s):
        while _alive(leader):  # noqa: ASYNC110 - group death has no event to wait on
            await anyio.sleep(_POLL_S)
        return
    logger.warning("process group %d ignored SIGTERM for %.1f s; sending SIGKILL", pgid, grace_s)
    _signal(pgid, signal.SIGKILL)


def _signal(pgid: int, sig: int) -> bool:
    """Send `sig` to the group; False when no member (not even a zombie) is left."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # only a member that changed its uid refuses; it is still there
    return True


def _alive(leader: Process) -> bool:
    pgid = leader.pid
    if not _signal(pgid, 0):
        return False
    # Only once the leader is reaped: reaping it here would steal its exit status from asyncio.
    if leader.returncode is not None:
        _reap_adopted(pgid)
    return _has_live_member(pgid)


def _reap_adopted(pgid: int) -> None:
    """Reap group members that were re-parented to us.

    When the gateway runs as PID 1 (a container without an init) or as a subreaper, orphaned
    grandchildren become our children, and nobody else would ever collect their zombies.
    """
    with suppress(ChildProcessError):
        while os.waitpid(-pgid, os.WNOHANG)[0] > 0:
            pass


def _has_live_member(pgid: int) -> bool:
    """Whether a non-zombie process is in the group.

    A killed orphan stays a zombie until init reaps it, which some inits do only every second
    or so; it is dead, and waiting for it would only slow every close down.
    """
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True  # no procfs: a zombie is indistinguishable from a live member
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # exited while we looked
        # Fields after "pid (comm) ": state ppid pgrp …; comm itself may contain ") ".
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False
