"""Who is calling and what the gateway remembers about one connected client: the identity a session carries
(a JWT's subject, a static token's name, or the OS user) and the per-client session."""

import getpass
import hashlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp.types as types
from cachetools import TTLCache

from gateway.store.base import SESSION_IDLE_S, ClientShare, SessionShare, StoreUnavailable
from gateway.telemetry.repeats import Repeating

logger = logging.getLogger(__name__)
repeats = Repeating(logger)
"""A store that is down fails every roaming session's calls alike: one line a minute says so, with a count."""

Kind = Literal["jwt", "static", "os", "anonymous"]


@dataclass(frozen=True, slots=True)
class Identity:
    """One principal. `key` tells principals apart; `name` is what policy rules and secrets are looked up by."""

    name: str
    """Display and lookup name: the JWT's name claim, the static token's name, the OS user, or "anonymous"."""
    kind: Kind
    subject: str
    """Unique within `kind` (and `issuer` for JWTs): the `sub` claim, the token's name, the OS user."""
    issuer: str | None = None
    groups: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    jwt: str | None = field(default=None, repr=False, compare=False)
    """The verified front-door JWT this request came with (HTTP front), kept for one use: exchanging it for a token
    for a `token_exchange` server (`downstreams.grants`). Never logged, stored or sent anywhere else."""

    key: str = field(init=False, repr=False, compare=False)
    """The principal's unique key: sessions, processes and secrets are never shared across keys."""
    owner: str = field(init=False, repr=False, compare=False)
    """Whose things the store keeps (`gateway.store.base.owned`): a digest of `key`, safe in file and key names
    and revealing no subject or issuer."""

    def __post_init__(self) -> None:
        # Both are read on every request: computed once (a frozen dataclass sets them through object).
        key = f"{self.kind}:{self.issuer or ''}:{self.subject}"
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "owner", hashlib.sha256(key.encode()).hexdigest()[:32])


OWNER_META_KEY = "gateway/owner"
"""The `_meta` key under which the gateway tells its own in-process servers (Think, `gateway.*`) whose call it is:
`Identity.owner`. Set by the forward only (a client's `_meta` never reaches them), sent to no other server."""


SESSION_META_KEY = "gateway/session"
"""Beside `OWNER_META_KEY`: which client session the call is of (`Session.key`), so Think can say which runs a
session drives (`Engine.noted`). Set by the forward for the gateway's own servers only."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Whose call an in-process server answers: the owner's key and the session's (None: not through the forward)."""

    owner: str | None
    session: str | None

    @classmethod
    def of(cls, meta: Mapping[str, object] | None) -> "Origin":
        session = (meta or {}).get(SESSION_META_KEY)
        return cls(owner_in(meta), session if isinstance(session, str) and session else None)


def owner_in(meta: Mapping[str, object] | None) -> str | None:
    """The owner an in-process server's request carries (None: it did not come through the gateway's forward)."""
    owner = (meta or {}).get(OWNER_META_KEY)
    return owner if isinstance(owner, str) and owner else None


ANONYMOUS = Identity("anonymous", "anonymous", "anonymous")
"""The caller of an HTTP front with no auth configured (one trust domain, like stdio)."""


def os_user() -> Identity:
    """The stdio front's single user: whoever runs the gateway process."""
    try:
        user = getpass.getuser()
    except OSError:  # no passwd entry and no LOGNAME/USER (containers): still one user
        user = "local"
    return Identity(user, "os", user)


REFRESH_S = 60.0
"""A shared session's idle expiry is restarted by a read at most this often (the restart is a write to Redis)."""


@dataclass(slots=True)
class Session:
    """State kept per client session, shared by all its calls."""

    key: str
    """The identity's key, then the MCP session id (HTTP), "stdio", or the peer: two principals never share one."""
    identity: Identity = ANONYMOUS
    """Who opened the session; every request on it comes from the same principal (the key includes it)."""
    shared: SessionShare | None = None
    """Where the fields below live for a session any replica may serve (a 2026-era one on `store.backend: redis`);
    None: this process's memory is the whole truth."""
    clients: ClientShare | None = None
    """Where the driver bootstrap and the promotions of the session's client live, shared by all its sessions and
    connections (None: `clients.window_s` is 0, they are the session's own)."""
    client: str | None = None
    """The client's `clientInfo.name`, noted by the front on first sight (exposure rules match it)."""
    task_mark: types.ToolExecution | None = None
    """What each listed downstream tool carries for this client: `execution.taskSupport` for a 2025-11-25 client
    of a gateway running calls as tasks (noted by the front on first sight; exposure adds it and counts it)."""
    first_response_seen: bool = False
    """Set after the first tool result went out (the driver bootstrap rides on that one)."""
    first_response_client: str | None = None
    """The `client` that result went to: a 2026-era session is its connection's address and port, which a later
    connection of another client may reuse while the session is kept, and that client's first result is its own."""
    active_runs: dict[str, str] = field(default_factory=dict[str, str])
    """Think runs this session drives: workflow name -> run id (with `shared`: what this replica last noted)."""
    data: dict[str, Any] = field(default_factory=dict[str, Any])
    """Per-session scratch for middlewares, keyed by middleware name."""
    refreshed: float = -REFRESH_S
    """When this replica last restarted the shared fields' idle expiry (monotonic seconds)."""
    kept: float = 0.0
    """When the session store last restarted this session's idle expiry (its timer's seconds)."""

    def client_key(self) -> str | None:
        """Who the client is across its sessions: its identity's owner and its `clientInfo.name` (not its version,
        which an upgrade changes mid-window), as a digest (a name is the client's to choose, of any length).
        None: no client memory, or a client not named yet (then the session is all the gateway knows of it)."""
        if self.clients is None or self.client is None:
            return None
        return hashlib.sha256(f"{self.identity.owner}\0{self.client}".encode()).hexdigest()[:32]

    async def first_response(self) -> bool:
        """Whether this tool result is the client's first (within `clients.window_s`), else the session's; it never
        is again in this session for the same client. Shared: once across replicas (after that, known here without
        asking)."""
        if self.first_response_seen and self.first_response_client == self.client:
            return False
        self.first_response_seen, self.first_response_client = True, self.client
        client = self.client_key()
        try:
            if client is not None and self.clients is not None:
                return await self.clients.claim_first(client)
            return True if self.shared is None else await self.shared.claim_first(self.key)
        except StoreUnavailable as exc:  # better the driver twice than never
            repeats.warning("session state: %s; %s", exc, "the driver prompt may come again")
            return True

    async def runs(self) -> dict[str, tuple[str, int | None]]:
        """The Think runs this session drives: workflow -> (run id, the run's stored version when shared)."""
        if self.shared is not None:
            now = time.monotonic()
            refresh = now - self.refreshed >= REFRESH_S
            try:
                found: dict[str, tuple[str, int | None]] = dict(
                    await self.shared.runs(self.key, self.identity.owner, refresh=refresh)
                )
                self.refreshed = now if refresh else self.refreshed
                return found
            except StoreUnavailable as exc:
                repeats.warning("session state: %s; %s", exc, "using this replica's view")
        return {workflow: (run_id, None) for workflow, run_id in self.active_runs.items()}

    async def track(self, workflow: str, run_id: str | None) -> None:
        """Note the run this session drives for `workflow`, or (None) that it drives none any more."""
        if run_id is None:
            self.active_runs.pop(workflow, None)
        else:
            self.active_runs[workflow] = run_id
        if self.shared is not None:
            try:
                await self.shared.track(self.key, workflow, run_id)
            except StoreUnavailable as exc:
                repeats.warning("session state: %s; %s", exc, "the run is tracked by this replica only")

    async def promoted(self) -> list[str] | None:
        """The tools the client found in any of its sessions (else this session's, on any replica, when shared);
        None: this session's view in memory is all."""
        client = self.client_key()
        try:
            if client is not None and self.clients is not None:
                return await self.clients.promoted(client)
            return None if self.shared is None else await self.shared.promoted(self.key)
        except StoreUnavailable as exc:
            repeats.warning("session state: %s; %s", exc, "listing this replica's view")
            return None

    async def promote(self, names: list[str]) -> None:
        """Share the session's promoted tools with the client's other sessions, else the other replicas (nothing
        to do when neither)."""
        client = self.client_key()
        try:
            if client is not None and self.clients is not None:
                await self.clients.promote(client, names)
            elif self.shared is not None:
                await self.shared.promote(self.key, names)
        except StoreUnavailable as exc:
            repeats.warning("session state: %s; %s", exc, "the promotion stays on this replica")


class SessionStore:
    """Sessions by key; idle ones expire (an HTTP client that went away leaves nothing behind)."""

    def __init__(
        self,
        ttl_s: float = SESSION_IDLE_S,
        maxsize: int = 10_000,
        timer: Callable[[], float] = time.monotonic,
        shared: SessionShare | None = None,
        clients: ClientShare | None = None,
    ):
        self._sessions: TTLCache[str, Session] = TTLCache(maxsize=maxsize, ttl=ttl_s, timer=timer)
        self._shared = shared
        self._clients = clients
        self._timer = timer
        self._keep_s = ttl_s / 16
        """A session's idle expiry is restarted at most this often: every request looks its session up."""

    def get(self, key: str, identity: Identity = ANONYMOUS, *, roaming: bool = False) -> Session:
        """`roaming`: a 2026-era session keyed by the client connection the balancer forwarded: nothing pins it to
        this replica, so its fields are shared (on the Redis store)."""
        try:
            session: Session | None = self._sessions[key]  # one lookup: `get` asks `in` and then `[]`
        except KeyError:
            session = None
        now = self._timer()
        fresh = session is None or session.identity.key != identity.key
        if session is None or fresh:
            # Keys embed the identity's key, so a mismatch means a new principal: never hand it another's state.
            session = Session(key, identity, self._shared if roaming else None, self._clients)
        session.identity = identity  # the same principal; a refreshed token may carry new groups or scopes
        if fresh or now - session.kept >= self._keep_s:
            session.kept = now
            self._sessions[key] = session  # re-insert restarts the idle timer
        return session

    def drop(self, key: str) -> None:
        """Forget a session that ended (its client closed it): nothing of it outlives the connection."""
        self._sessions.pop(key, None)

    def __len__(self) -> int:
        return len(self._sessions)
