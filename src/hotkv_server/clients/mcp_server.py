"""``hotkv-memory-mcp``: an MCP server that gives a coding assistant memory kept in hotkv.

Tools cover conversation memory, working notes (the scratchpad), the event log, the
rolling summary and semantic memory (store / recall / list / forget facts). It speaks
stdio (the default: the assistant starts it) or streamable HTTP (``--transport http``).

Isolation: with a prefix (``--prefix assistant-a``) every id the assistant names
(session, agent, namespace) is stored as ``assistant-a:<id>``, and ids shown back have the
prefix removed, so the assistant cannot name, list or reach memory outside its prefix.
``--read-only`` registers only the tools that read. Defaults for a new conversation's
window and idle TTL are settings, as is the working-note TTL.

Facts need a vector. An assistant rarely has an embedding model, so a namespace the tools
create is bound to the server's embedder (``--embedder``, default ``wordllama``: the
server embeds each fact's text and each query, docs/embeddings.md) and recall by text
goes by meaning (``AMEM.SEM.RECALL ns k TEXT query``, ``matched_by`` "meaning"). A
namespace without an embedder (made elsewhere, or on a server without that embedder)
keeps the older way: a fact stored without ``embedding`` gets the hashed word embedding
of :mod:`hotkv_server.clients.embedding`; recall by text asks the server's text search
(``AMEM.SEM.SEARCH ns k TEXT query``) first and, on a server without it, falls back to
that embedding, saying so in ``matched_by``.

Settings come from flags or the environment (flags win): ``--url`` / ``HOTKV_URL``,
``--prefix`` / ``HOTKV_MCP_PREFIX``, ``--read-only`` / ``HOTKV_MCP_READ_ONLY``,
``--window`` / ``HOTKV_MCP_WINDOW``, ``--ttl`` / ``HOTKV_MCP_TTL``, ``--notes-ttl`` /
``HOTKV_MCP_NOTES_TTL``, ``--embedding-dim`` / ``HOTKV_MCP_EMBEDDING_DIM``, ``--embedder`` /
``HOTKV_MCP_EMBEDDER`` ("none": no server embedder),
``--transport`` / ``HOTKV_MCP_TRANSPORT``, ``--host`` / ``HOTKV_MCP_HOST``, ``--port`` /
``HOTKV_MCP_PORT``.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from redis.exceptions import RedisError, ResponseError

from hotkv_server import __version__
from hotkv_server.clients.aio import Hotkv
from hotkv_server.clients.commands import StoreT
from hotkv_server.clients.embedding import DEFAULT_DIM, hashed_embedding
from hotkv_server.clients.errors import Exists, NotFound
from hotkv_server.clients.replies import Record

StoreName = Literal["conversations", "notes", "events", "summaries", "facts"]

#: the MCP names of the stores -> AMEM.SCAN TYPE
_SCAN_TYPES: dict[str, StoreT] = {
    "conversations": "conv",
    "notes": "work",
    "events": "epis",
    "summaries": "summary",
    "facts": "sem",
}
_GLOB_SPECIAL = frozenset("*?[]\\")


@dataclass(frozen=True)
class McpConfig:
    """What one hotkv-mcp process serves, and how."""

    url: str = "hotkv://127.0.0.1:6379"
    prefix: str = ""
    read_only: bool = False
    window: int = 50
    ttl: int = 7 * 86400  # idle lifetime of a new conversation, seconds; 0 = none
    notes_ttl: int = 0  # lifetime of a working note, seconds; 0 = none
    embedding_dim: int = DEFAULT_DIM
    #: the server embedder new namespaces are bound to ("" for none)
    embedder: str = "wordllama"
    transport: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = 8000

    def scoped(self, ident: str, what: str) -> str:
        """The stored id of the assistant's ``ident``: always under the prefix."""
        if not ident:
            raise ToolError(f"{what} must be a non-empty string")
        return f"{self.prefix}:{ident}" if self.prefix else ident

    def unscoped(self, stored: str) -> str:
        return stored[len(self.prefix) + 1:] if self.prefix else stored

    def match_all(self) -> str:
        """An AMEM.SCAN MATCH pattern for every id under the prefix."""
        if not self.prefix:
            return "*"
        escaped = "".join("\\" + c if c in _GLOB_SPECIAL else c for c in self.prefix)
        return escaped + ":*"


def _is_unknown_command(exc: ResponseError) -> bool:
    return str(exc).lower().startswith("unknown command")


#: server advice that names commands an assistant cannot run, cut from tool errors
_ADVICE = re.compile(r";\s*(create it with|add UPDATE)[^;]*")


def assistant_message(message: str, config: McpConfig) -> str:
    """A server error as the assistant may read it: its own ids (the hidden prefix taken
    off) and no advice to run server commands it has no tool for."""
    if config.prefix:
        message = message.replace(f"'{config.prefix}:", "'")
    return _ADVICE.sub("", message).strip()


def _tool_errors(fn: Callable[..., Awaitable[Any]], config: McpConfig) -> Callable[..., Awaitable[Any]]:
    """Server errors reach the assistant as tool errors carrying the server's message, in
    the assistant's terms (see :func:`assistant_message`)."""

    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return await fn(*args, **kwargs)
        except ToolError:
            raise
        except RedisError as exc:
            code = getattr(exc, "status_code", None)
            text = assistant_message(str(exc), config)
            raise ToolError(f"{code} {text}" if code else text) from exc

    return wrapper


def _public_fact(fact: Record) -> Record:
    fact.pop("vector", None)
    return fact


def build_server(config: McpConfig, client: Hotkv | None = None) -> MCPServer:
    """The MCP server for ``config``; ``client`` defaults to one made from ``config.url``."""
    db = client if client is not None else Hotkv.from_url(config.url)
    server: MCPServer = MCPServer(
        name="hotkv",
        version=__version__,
        instructions=(
            "Memory kept in hotkv. Conversation turns and working notes are per session; "
            "the event log and the rolling summary per agent; facts per namespace, found "
            "again by meaning with recall_facts. "
            + ("This server is read-only." if config.read_only else "")
        ),
    )

    def tool(fn: Callable[..., Awaitable[Any]], *, writes: bool, title: str,
             destructive: bool = False) -> None:
        """Register ``fn``; ``destructive`` for a write that removes or replaces what an
        assistant cannot get back (MCP's destructiveHint)."""
        if writes and config.read_only:
            return
        server.add_tool(
            _tool_errors(fn, config),
            name=fn.__name__,
            title=title,
            annotations=ToolAnnotations(read_only_hint=not writes,
                                        destructive_hint=writes and destructive),
        )

    # --- conversation memory --------------------------------------------------
    async def append_turn(session: str, role: Literal["system", "user", "assistant", "tool"],
                          content: str) -> dict[str, Any]:
        """Append a turn to a conversation (created on first use with the default window
        and idle TTL); returns the turn's sequence number."""
        sid = config.scoped(session, "session")
        try:
            seq = await db.amem_conv_append(sid, role, content)
        except NotFound:
            try:
                await db.amem_conv_create(sid, window=config.window,
                                          ttl=config.ttl or None)
            except Exists:  # another writer created it in between
                pass
            seq = await db.amem_conv_append(sid, role, content)
        return {"session": session, "seq": seq}

    async def read_turns(session: str, last: int = 20) -> dict[str, Any]:
        """The last turns of a conversation, oldest first (seq, role, content, ts)."""
        turns = await db.amem_conv_window(config.scoped(session, "session"), last)
        return {"session": session, "turns": turns}

    async def clear_conversation(session: str) -> dict[str, Any]:
        """Delete a conversation and all its turns."""
        deleted = await db.amem_conv_del(config.scoped(session, "session"))
        return {"session": session, "deleted": bool(deleted)}

    # --- working notes --------------------------------------------------------
    async def write_note(session: str, key: str, value: str,
                         ttl_seconds: int | None = None) -> dict[str, Any]:
        """Set a working note (scratchpad key) of a session. ``ttl_seconds`` overrides the
        default note lifetime (0: keep it)."""
        seconds = config.notes_ttl if ttl_seconds is None else ttl_seconds
        await db.amem_work_set(config.scoped(session, "session"), key, value,
                               ttl=seconds or None)
        return {"session": session, "key": key, "stored": True}

    async def read_notes(session: str, key: str | None = None) -> dict[str, Any]:
        """One working note (``key``) or all notes of a session."""
        sid = config.scoped(session, "session")
        if key is not None:
            return {"session": session, "key": key, "value": await db.amem_work_get(sid, key)}
        return {"session": session, "notes": await db.amem_work_getall(sid)}

    async def delete_note(session: str, key: str) -> dict[str, Any]:
        """Delete one working note."""
        deleted = await db.amem_work_del(config.scoped(session, "session"), key)
        return {"session": session, "key": key, "deleted": bool(deleted)}

    # --- event log ------------------------------------------------------------
    async def log_event(agent: str, type: str, text: str) -> dict[str, Any]:
        """Append an event (type: a token such as action, observation, decision) to an
        agent's log; returns its id."""
        event_id = await db.amem_epis_log(config.scoped(agent, "agent"), type, text)
        return {"agent": agent, "id": event_id}

    async def query_events(agent: str, type: str | None = None, limit: int = 20,
                           newest_first: bool = True) -> dict[str, Any]:
        """Events of an agent's log, newest first by default, optionally of one type."""
        events = await db.amem_epis_query(config.scoped(agent, "agent"), type=type,
                                          limit=limit, rev=newest_first)
        return {"agent": agent, "events": events}

    # --- rolling summary ------------------------------------------------------
    async def read_summary(agent: str) -> dict[str, Any]:
        """An agent's rolling summary: text and version (null when there is none)."""
        return {"agent": agent, "summary": await db.amem_summary_get(config.scoped(agent, "agent"))}

    async def write_summary(agent: str, text: str,
                            if_version: int | None = None) -> dict[str, Any]:
        """Replace an agent's summary. With ``if_version`` only when the summary is still at
        that version (0: none yet), so a concurrent update is not lost."""
        version = await db.amem_summary_set(config.scoped(agent, "agent"), text,
                                            ifversion=if_version)
        return {"agent": agent, "version": version}

    async def append_summary(agent: str, line: str) -> dict[str, Any]:
        """Add a line to an agent's summary."""
        version = await db.amem_summary_append(config.scoped(agent, "agent"), line)
        return {"agent": agent, "version": version}

    # --- semantic memory ------------------------------------------------------
    async def _ensure_namespace(ns: str, dim: int) -> None:
        try:
            await db.amem_sem_create(ns, dim)
        except Exists:
            pass

    async def _server_embeds(ns: str) -> bool:
        """Whether the namespace has a server embedder; a missing one is created bound to
        ``config.embedder`` when the server has that embedder."""
        info = await db.amem_sem_info(ns)
        if info is None and config.embedder:
            try:
                await db.amem_sem_create(ns, embedder=config.embedder)
                return True
            except Exists:
                info = await db.amem_sem_info(ns)
            except ResponseError as exc:  # no such embedder here, or an older server
                if "embedder" not in str(exc).lower() and "EMBEDDER" not in str(exc):
                    raise
                return False
        return info is not None and bool(info.get("embedder"))

    async def store_fact(namespace: str, id: str, text: str, kind: str = "fact",
                         confidence: float = 1.0, source: str | None = None,
                         embedding: list[float] | None = None) -> dict[str, Any]:
        """Store a fact under ``id`` in a namespace (a second store under the same id
        corrects it). Without ``embedding`` the server's embedder embeds the text (or, in
        a namespace without one, the fact is embedded by its words)."""
        ns = config.scoped(namespace, "namespace")
        if embedding is None and await _server_embeds(ns):
            created = await db.amem_sem_store(ns, id, text, kind=kind, confidence=confidence,
                                              source=source)
            return {"namespace": namespace, "id": id, "created": bool(created)}
        vector: Any = embedding
        if vector is None:
            info = await db.amem_sem_info(ns)
            vector = hashed_embedding(text, info["dim"] if info else config.embedding_dim)
        await _ensure_namespace(ns, len(vector))
        created = await db.amem_sem_store(ns, id, text, vector, kind=kind,
                                          confidence=confidence, source=source)
        return {"namespace": namespace, "id": id, "created": bool(created)}

    async def recall_facts(namespace: str, query: str, k: int = 5,
                           embedding: list[float] | None = None, kind: str | None = None,
                           min_similarity: float | None = None) -> dict[str, Any]:
        """Facts of a namespace closest to ``query`` (or to ``embedding`` when given),
        best first: by meaning (the namespace's server embedder embeds ``query``) or by
        embedding, each with its similarity (``min_similarity`` applies); in a namespace
        without an embedder by text, each with its BM25 ``text_score``. ``matched_by``
        says how they were found."""
        ns = config.scoped(namespace, "namespace")
        facts: list[Record]
        info: Any = None if embedding is not None else await db.amem_sem_info(ns)
        matched_by = "embedding" if embedding is not None else "text-search"
        try:
            if embedding is not None:
                facts = await db.amem_sem_recall(ns, k, embedding, kind=kind,
                                                 minsim=min_similarity)
            elif info is not None and info.get("embedder"):
                facts = await db.amem_sem_recall(ns, k, text=query, kind=kind,
                                                 minsim=min_similarity)
                matched_by = "meaning"
            else:
                facts = await db.amem_sem_search(ns, k, query, kind=kind)
        except NotFound:  # a namespace nothing was stored in yet: no facts, not an error
            facts = []
        except ResponseError as exc:
            if embedding is not None or not _is_unknown_command(exc):
                raise
            info = await db.amem_sem_info(ns)
            if info is None:
                facts = []
            else:
                if info["dim"] != config.embedding_dim:
                    raise ToolError(
                        f"namespace '{namespace}' holds {info['dim']}-dimensional embeddings and "
                        "this server has no text search: pass `embedding`") from exc
                facts = await db.amem_sem_recall(ns, k, hashed_embedding(query, info["dim"]),
                                                 kind=kind, minsim=min_similarity)
                matched_by = "hashed-words"
        return {"namespace": namespace, "matched_by": matched_by,
                "facts": [_public_fact(f) for f in facts]}

    async def list_facts(namespace: str, prefix: str | None = None, kind: str | None = None,
                         cursor: str = "0", count: int = 50) -> dict[str, Any]:
        """One page of a namespace's facts in id order; pass the returned cursor for the
        next page ("0" when done)."""
        next_cursor, facts = await db.amem_sem_list(config.scoped(namespace, "namespace"),
                                                    prefix=prefix, kind=kind, cursor=cursor,
                                                    count=count)
        return {"namespace": namespace, "cursor": next_cursor,
                "facts": [_public_fact(f) for f in facts]}

    async def forget_fact(namespace: str, id: str) -> dict[str, Any]:
        """Delete a fact."""
        deleted = await db.amem_sem_del(config.scoped(namespace, "namespace"), id)
        return {"namespace": namespace, "id": id, "deleted": bool(deleted)}

    # --- discovery ------------------------------------------------------------
    async def list_ids(store: StoreName, limit: int = 100) -> dict[str, Any]:
        """The sessions (conversations, notes), agents (events, summaries) or namespaces
        (facts) that exist, up to ``limit``."""
        found: list[str] = []
        async for stored in db.amem_scan_iter(_SCAN_TYPES[store],
                                              match=config.match_all(), count=500):
            found.append(config.unscoped(stored))
            if len(found) >= limit:
                break
        return {"store": store, "ids": found}

    tool(append_turn, writes=True, title="Append a conversation turn")
    tool(read_turns, writes=False, title="Read recent conversation turns")
    tool(clear_conversation, writes=True, title="Delete a conversation", destructive=True)
    tool(write_note, writes=True, title="Write a working note")
    tool(read_notes, writes=False, title="Read working notes")
    tool(delete_note, writes=True, title="Delete a working note", destructive=True)
    tool(log_event, writes=True, title="Log an event")
    tool(query_events, writes=False, title="Query the event log")
    tool(read_summary, writes=False, title="Read the rolling summary")
    tool(write_summary, writes=True, title="Replace the rolling summary", destructive=True)
    tool(append_summary, writes=True, title="Add a line to the rolling summary")
    tool(store_fact, writes=True, title="Store a fact")
    tool(recall_facts, writes=False, title="Recall facts")
    tool(list_facts, writes=False, title="List facts")
    tool(forget_fact, writes=True, title="Forget a fact", destructive=True)
    tool(list_ids, writes=False, title="List sessions, agents or namespaces")
    return server


def _env_flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "yes", "true", "on")


def parse_config(argv: Sequence[str] | None = None,
                 environ: dict[str, str] | None = None) -> McpConfig:
    """Settings from flags, then ``HOTKV_*`` environment variables, then defaults."""
    env = os.environ if environ is None else environ
    base = McpConfig()
    parser = argparse.ArgumentParser(prog="hotkv-memory-mcp", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=env.get("HOTKV_URL", base.url),
                        help="hotkv server URL (hotkv://, redis://, rediss://, unix://)")
    parser.add_argument("--prefix", default=env.get("HOTKV_MCP_PREFIX", base.prefix),
                        help="every id is stored as PREFIX:id; nothing outside is reachable")
    parser.add_argument("--read-only", action="store_true",
                        default=_env_flag(env.get("HOTKV_MCP_READ_ONLY")),
                        help="serve only the tools that read")
    parser.add_argument("--window", type=int, default=int(env.get("HOTKV_MCP_WINDOW", base.window)),
                        help="window of a new conversation (turns)")
    parser.add_argument("--ttl", type=int, default=int(env.get("HOTKV_MCP_TTL", base.ttl)),
                        help="idle TTL of a new conversation in seconds (0: none)")
    parser.add_argument("--notes-ttl", type=int,
                        default=int(env.get("HOTKV_MCP_NOTES_TTL", base.notes_ttl)),
                        help="default TTL of a working note in seconds (0: none)")
    parser.add_argument("--embedding-dim", type=int,
                        default=int(env.get("HOTKV_MCP_EMBEDDING_DIM", base.embedding_dim)),
                        help="dimension of the built-in word embedding")
    parser.add_argument("--embedder", default=env.get("HOTKV_MCP_EMBEDDER", base.embedder),
                        help="server embedder new namespaces are bound to ('none': none)")
    parser.add_argument("--transport", choices=("stdio", "http"),
                        default=env.get("HOTKV_MCP_TRANSPORT", base.transport))
    parser.add_argument("--host", default=env.get("HOTKV_MCP_HOST", base.host),
                        help="address of the HTTP transport")
    parser.add_argument("--port", type=int, default=int(env.get("HOTKV_MCP_PORT", base.port)),
                        help="port of the HTTP transport")
    ns = parser.parse_args(argv)
    if ns.prefix.endswith(":"):
        ns.prefix = ns.prefix[:-1]
    for name in ("window", "embedding_dim"):
        if getattr(ns, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    for name in ("ttl", "notes_ttl"):
        if getattr(ns, name) < 0:
            parser.error(f"--{name.replace('_', '-')} must be 0 (none) or more")
    return McpConfig(url=ns.url, prefix=ns.prefix, read_only=ns.read_only, window=ns.window,
                     ttl=ns.ttl, notes_ttl=ns.notes_ttl, embedding_dim=ns.embedding_dim,
                     embedder="" if ns.embedder.lower() in ("", "none") else ns.embedder,
                     transport=ns.transport, host=ns.host, port=ns.port)


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_config(argv)
    server = build_server(config)
    if config.transport == "http":
        server.run("streamable-http", host=config.host, port=config.port)
    else:
        server.run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
