"""Running scripts: the script cache, the script thread, the time limit, BUSY and SCRIPT KILL.

Design (why a thread). Redis answers other clients with ``-BUSY`` while a script runs longer
than ``busy-reply-threshold`` and lets ``SCRIPT KILL`` stop it, so the event loop must keep
answering while a script runs. A Lua debug hook cannot yield back to asyncio (Lua 5.1 hooks
cannot yield, and the loop cannot be re-entered from inside a callback), so a script runs on
one dedicated *script thread* while the event-loop thread waits for it:

* The loop thread hands the call to the script thread and blocks on it for up to
  ``busy-reply-threshold`` ms. Nothing else runs meanwhile, so the script's ``redis.call``\\ s
  (made on the script thread through ``dispatch_script``) touch the stores exactly as a
  command on the loop thread would: atomicity is the same as Redis's.
* A script that finishes in time (all but pathological ones) is answered at once. A script
  still running then makes the server *busy*: ``core.busy`` is set, the EVAL's reply becomes
  a Deferred and the loop thread goes back to serving. While busy, the dispatch point answers
  every command not flagged ``allow_busy`` with ``-BUSY`` (SCRIPT KILL, SHUTDOWN NOSAVE,
  MULTI/WATCH bookkeeping pass), and the background cron (active expiry, rewrites, fsync
  ticks) skips its turns, so only the script thread touches the data.
* SCRIPT KILL sets a flag that the Lua count hook (every 100,000 instructions) reads; the
  script then fails with ``Script killed by user with SCRIPT KILL...`` and the hook fires on
  every line so a ``pcall`` cannot keep it alive. A script that already ran a write
  command cannot be killed (``-UNKILLABLE``): its half-done writes would be exposed.
* lupa releases the GIL while Lua code runs, so a busy pure-Lua loop leaves the loop thread
  free to answer.

Effects. While a script runs an effect group is open (``core.effects.begin``), so the effects of its commands pile up
in ``core.pending_effects`` and leave as one record (``["tx", [...]]`` when several) at its
end, exactly like a MULTI/EXEC block: the AOF and replicas get the script's writes, never the
script.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import Deferred, dispatch_script, resolve, returned_errors
from hotkv_server.engine.errors import NOTBUSY, UNKILLABLE
from hotkv_server.engine.replies import ErrorReply
from hotkv_server.scripting.convert import FromLua, ToLua, lua_number_to_integer
from hotkv_server.scripting.sandbox import HostError, Sandbox, sha1hex

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core

log = logging.getLogger("hotkv")
_monotonic = time.monotonic

#: a script whose run took less than this is run on the loop thread the next time (wall
#: time from the start of the run: keeping a script on the loop thread after one slow run,
#: or judging by the Lua call alone, measured slower on the loaded benchmark machine,
#: benchmarks/README.md)
FAST_RUN_S = 0.005

_SHEBANG_FLAGS = {b"no-writes", b"allow-oom", b"allow-stale", b"no-cluster", b"allow-cross-slot-keys"}


class Script:
    """One cached script: its body, its compiled function and its shebang flags."""

    __slots__ = ("body", "fast", "flags", "fn", "no_writes", "sha")

    def __init__(self, sha: str, body: bytes, fn: Any, flags: frozenset[bytes] | None) -> None:
        self.sha = sha
        self.body = body
        self.fn = fn
        #: its last run ended within FAST_RUN_S: the next one runs on the loop thread
        self.fast = False
        #: None for a script without a shebang line (Redis's legacy rules)
        self.flags = flags
        #: ``#!lua flags=no-writes``: run as EVAL_RO runs, whatever command ran it
        self.no_writes = flags is not None and b"no-writes" in flags


class Run:
    """One script being run: who called it, its protocol, and what it did so far."""

    __slots__ = (
        "caller",
        "counted",
        "ctx",
        "deadline",
        "fresh",
        "kill",
        "readonly",
        "resp",
        "restart",
        "script",
        "started",
        "warned",
        "wrote",
    )

    def __init__(self, caller: Context, ctx: Context, script: Script, readonly: bool) -> None:
        self.caller = caller
        self.ctx = ctx
        self.script = script
        self.readonly = readonly
        self.resp = 2
        self.wrote = False
        self.kill = False
        self.started = time.monotonic()
        #: run on the loop thread: when it must stop and start again on the script thread
        #: (monotonic seconds), else None
        self.deadline: float | None = None
        #: the direct run passed its deadline before writing: it is being abandoned
        self.restart = False
        #: the error replies of its reply (at any depth) that errorstats has not counted
        #: yet, and whether it has others that were counted where they were made (a
        #: redis.call error raised through, a redis.pcall error table returned): either
        #: way the call failed, as Redis 7 counts it (ERR_REPLY_FLAG_NO_STATS_UPDATE)
        self.fresh: list[ErrorReply] = []
        self.counted = False
        self.warned = False


class _Job:
    """A call handed to the script thread, and how its end is reported back.

    ``finished`` is held from creation until the call is done (the loop thread waits on it:
    one futex wake per call, the cheapest hand-back there is); ``state`` guards ``done`` and
    ``on_done`` against the race of a script ending while the loop thread turns busy.
    """

    __slots__ = ("done", "finished", "fn", "on_done", "result", "state")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.result: Any = None
        self.done = False
        self.finished = threading.Lock()
        self.finished.acquire()
        self.state = threading.Lock()
        self.on_done: Callable[[], None] | None = None


class ScriptThread:
    """The one thread Lua runs on (started on first use)."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None

    def submit(self, fn: Callable[[], Any]) -> _Job:
        if self.thread is None:
            self.thread = threading.Thread(target=self._serve, name="hotkv-script", daemon=True)
            self.thread.start()
        job = _Job(fn)
        self.jobs.put(job)
        return job

    @staticmethod
    def wait(job: _Job, timeout_s: float | None) -> bool:
        """Block until ``job`` is done or ``timeout_s`` passed (None: without limit)."""
        if job.finished.acquire(timeout=-1 if timeout_s is None else timeout_s):
            job.finished.release()
            return True
        return False

    def _serve(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                job.result = job.fn()
            except BaseException as exc:  # a bug must end this call, not the thread
                log.exception("internal error running a script")
                job.result = ErrorReply(f"ERR internal error running a script: {type(exc).__name__}")
            with job.state:
                job.done = True
                callback = job.on_done
            job.finished.release()
            if callback is not None:
                callback()


class ScriptEngine:
    """The script cache and the one script run at a time (``core.scripts``)."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.cache: dict[str, Script] = {}
        #: the same scripts by their sha as EVALSHA sends it (lower-case ASCII bytes)
        self.by_sha: dict[bytes, Script] = {}
        self.running: Run | None = None
        self.thread = ScriptThread()
        self.sandbox = Sandbox(self._call, self._pcall, self._killed, self._setresp, self._acl_check)
        self.to_lua = ToLua(self.sandbox.runtime)
        self._ctx: Context | None = None

    # --- the cache -----------------------------------------------------------------------
    def load(self, body: bytes) -> Script | str:
        """The cached script of ``body`` (compiled and cached if new), or the compile error."""
        sha = sha1hex(body)
        found = self.cache.get(sha)
        if found is not None:
            return found
        flags: frozenset[bytes] | None = None
        source = body
        if body.startswith(b"#!"):
            parsed = _shebang(body)
            if isinstance(parsed, str):
                return parsed
            flags, source = parsed
        fn, message = self.sandbox.compile(source)
        if fn is None:
            return f"ERR Error compiling script (new function): {message}"
        script = Script(sha, body, fn, flags)
        self.cache[sha] = script
        self.by_sha[sha.encode()] = script
        return script

    def flush(self) -> None:
        self.cache.clear()
        self.by_sha.clear()

    # --- running -----------------------------------------------------------------------------
    def run(self, caller: Context, script: Script, keys: list[bytes], args: list[bytes],
            readonly: bool) -> Any:
        """Run one script for ``caller``: its reply, or a Deferred if it outlives the limit."""
        core = self.core
        if script.no_writes:
            readonly = True
        ctx = self._script_context(caller)
        limit_ms = core.config.busy_reply_threshold
        limit_s: float | None = limit_ms / 1000 if limit_ms > 0 else None
        core.effects.begin()  # the script's effects leave as one record, after it
        if script.fast:
            run = Run(caller, ctx, script, readonly)
            if limit_s is not None:
                run.deadline = run.started + limit_s
            self.running = run
            reply = self._execute(run, keys, args)
            if not run.restart:
                self._finished(run)
                script.fast = _monotonic() - run.started < FAST_RUN_S
                return reply
            # past the limit without a write: forget this run, start it again on the script
            # thread and answer BUSY at once (the time was spent already)
            script.fast = False
            limit_s = 0.0
            ctx.proto = 2  # as a fresh run starts (the abandoned one may have set RESP3)
        run = Run(caller, ctx, script, readonly)
        self.running = run
        job = self.thread.submit(lambda: self._execute(run, keys, args))
        outcome: bool | Deferred = self.thread.wait(job, limit_s)
        if outcome is False:
            outcome = self._become_busy(run, job)
        if outcome is True:
            self._finished(run)
            script.fast = _monotonic() - run.started < FAST_RUN_S
            return job.result
        return outcome

    def _become_busy(self, run: Run, job: _Job) -> bool | Deferred:
        """The script passed the limit: answer BUSY to others until it ends (or, when its
        caller cannot wait for a Deferred, keep blocking)."""
        core = self.core
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a Core driven directly): just wait
            self.thread.wait(job, None)
            return True
        log.warning("Slow script detected: still in execution after %d milliseconds. "
                    "You can try killing the script using the SCRIPT KILL command. "
                    "Script name is: f_%s.", int((time.monotonic() - run.started) * 1000),
                    run.script.sha)
        deferred = Deferred()
        loop = asyncio.get_running_loop()

        def finish_on_loop() -> None:
            # commit hands the records out unless in EXEC
            deferred.failed = self._finished(run, late=True)
            deferred.resolve(job.result)

        with job.state:
            if job.done:
                return True

            def wake_loop() -> None:
                loop.call_soon_threadsafe(finish_on_loop)

            job.on_done = wake_loop
            core.busy = run
        return deferred

    def _finished(self, run: Run, *, late: bool = False) -> bool:
        """The run is over: its effects leave, and the error replies of its reply are
        counted (``late``: after a Deferred was returned); True when the call failed."""
        core = self.core
        self.running = None
        if core.busy is not None:  # (its setter recomputes the gates: not on every run)
            core.busy = None
        core.effects.commit()
        run.ctx.user = None
        if run.fresh or run.counted:
            returned_errors(core, run.fresh, late)
            return True
        return False

    def _execute(self, run: Run, keys: list[bytes], args: list[bytes]) -> Any:
        """On the script thread: call the script and turn its result into a reply."""
        if len(keys) + len(args) <= 200:
            outcome = self.sandbox.run_varargs(run.script.fn, len(keys), *keys, *args)
        else:  # Lua's C stack holds a few thousand values: many go as two tables
            outcome = self.sandbox.run_tables(run.script.fn, keys, args)
        ok, result = outcome  # bootstrap.lua's run returns exactly (ok, result)
        if ok:
            t = type(result)
            if t is bytes:  # a string is a bulk string whatever the protocols
                return result
            if t is int:  # an integral number (lupa gives one for a whole Lua number)
                return lua_number_to_integer(result)
            convert = FromLua(run.resp, run.caller.proto, self.to_lua.negative_zero)
            reply = convert.reply(result)
            run.fresh, run.counted = convert.fresh, convert.counted
            return reply
        failure = ErrorReply(self._failure_text(run, result))
        try:
            counted = result[b"counted"] is True
        except (TypeError, KeyError):
            counted = False
        run.fresh, run.counted = ([], True) if counted else ([failure], False)
        return failure

    @staticmethod
    def _failure_text(run: Run, err: Any) -> str:
        """``<error> script: <sha>, on @user_script:<line>.``, as Redis 7.0 words a failure."""
        message, source, line = "ERR unknown error", "?", "?"
        try:
            raw = err[b"err"]
            message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            src, ln = err[b"source"], err[b"line"]
            source = src.decode("utf-8", "replace") if isinstance(src, bytes) else "?"
            line = ln.decode("utf-8", "replace") if isinstance(ln, bytes) else str(ln)
        except (TypeError, KeyError):
            pass
        return f"{message} script: {run.script.sha}, on {source}:{line}."

    def _script_context(self, caller: Context) -> Context:
        """The context a script's commands run in: the caller's user and clock snapshot."""
        ctx = self._ctx
        if ctx is None:
            ctx = self._ctx = Context(self.core)
            self.core.clients.pop(ctx.id, None)
            ctx.flags = ""
        ctx.user = caller.user
        ctx.username = caller.username
        ctx.authenticated = True
        ctx.now_ms = caller.now_ms
        ctx.proto = 2
        ctx.multi = None
        ctx.name = caller.name
        return ctx

    def kill(self) -> str | None:
        """SCRIPT KILL: None when the running script will stop, else the error text."""
        run = self.running
        if run is None or self.core.busy is None:
            return NOTBUSY
        if run.wrote:
            return UNKILLABLE
        run.kill = True
        return None

    # --- host functions (called from Lua, on the script thread) ---------------------------
    def _killed(self) -> bool:
        run = self.running
        if run is None:
            return False
        if run.deadline is not None and time.monotonic() > run.deadline:
            return self._past_deadline(run)
        return run.kill

    def _past_deadline(self, run: Run) -> bool:
        """A run on the loop thread passed busy-reply-threshold: abandon it (True) when it
        wrote nothing, so it starts again on the script thread; one that wrote must go on
        here (its writes cannot be undone), with the loop waiting for it."""
        if not run.wrote:
            run.restart = True
            return True
        if not run.warned:
            run.warned = True
            log.warning("Slow script detected: f_%s wrote and runs past busy-reply-threshold "
                        "on the event loop; clients wait until it ends", run.script.sha)
        return False

    def _setresp(self, *args: Any) -> None:
        run = self.running
        if len(args) != 1:
            raise HostError(b"ERR redis.setresp() requires one argument.")
        value = args[0]
        if type(value) not in (int, float) or value not in (2, 3):
            raise HostError(b"ERR RESP version must be 2 or 3.")
        if run is not None:
            run.resp = int(value)
            run.ctx.proto = int(value)

    def _command(self, args: tuple[Any, ...]) -> tuple[Run | None, Any]:
        """Run one redis.call/pcall: (the run, the reply) or (run, ErrorReply)."""
        run = self.running
        if run is None:
            return None, ErrorReply("ERR redis.call is only available while a script runs")
        if run.deadline is not None and (run.restart or (
                _monotonic() > run.deadline and self._past_deadline(run))):
            return run, ErrorReply("ERR the script is started again on the script thread")
        if not args:
            return run, ErrorReply("ERR Please specify at least one argument for this redis lib call")
        argv = [*args]
        for arg in argv:
            if type(arg) is not bytes:  # numbers are sent as Lua prints them, %.17g
                for i, item in enumerate(argv):
                    t = type(item)
                    if t is int or t is float:
                        argv[i] = b"%.17g" % item
                    elif t is not bytes:
                        return run, ErrorReply(
                            "ERR Lua redis lib command arguments must be strings or integers")
                break
        return run, dispatch_script(run.ctx, argv, run)

    def _call(self, *args: Any) -> Any:
        """redis.call: the reply as a Lua value; an error reply is raised (HostError).

        The common call (a script running on time, string arguments) goes straight to the
        dispatch point; anything else takes ``_command``, which redis.pcall shares."""
        run = self.running
        if run is not None and args and not run.restart and (
                run.deadline is None or _monotonic() <= run.deadline):
            for arg in args:
                if type(arg) is not bytes:
                    run, reply = self._command(args)
                    break
            else:
                reply = dispatch_script(run.ctx, [*args], run)
        else:
            run, reply = self._command(args)
        t = type(reply)
        if t is bytes or t is int:  # the common replies, as ToLua.reply passes them
            return reply
        if t is ErrorReply:
            raise HostError(str(reply).encode("utf-8", "replace"))
        return self.to_lua.reply(reply, run.resp if run is not None else 2)

    def _pcall(self, *args: Any) -> Any:
        run, reply = self._command(args)
        if type(reply) is ErrorReply:
            return self._error_table(reply)
        return self.to_lua.reply(reply, run.resp if run is not None else 2)

    def _error_table(self, reply: ErrorReply) -> Any:
        text = str(reply)
        return self.sandbox.table({b"err": text.encode("utf-8", "replace"),
                                   b"ignore_error_stats_update": True})

    def _acl_check(self, *args: Any) -> Any:
        run = self.running
        if run is None or not args:
            raise HostError(b"ERR Please specify at least one argument for this redis lib call")
        if any(type(a) not in (bytes, int, float) for a in args):
            raise HostError(b"ERR Lua redis lib command arguments must be strings or integers")
        argv = [a if type(a) is bytes else b"%.17g" % a for a in args]
        found = resolve(run.ctx, argv)
        if isinstance(found, str):
            raise HostError(b"ERR Invalid command passed to redis.acl_check_cmd()")
        user = run.ctx.user
        if user is None or not user.restricted:
            return True
        return user.denial(found, argv) is None


def _shebang(body: bytes) -> tuple[frozenset[bytes], bytes] | str:
    """The flags of a ``#!lua flags=...`` first line, and the body with that line blanked."""
    end = body.find(b"\n")
    line = body[2:] if end < 0 else body[2:end]
    words = line.split()
    if not words or words[0] != b"lua":
        first = body[: (end if end >= 0 else len(body))].split()
        shown = first[0].decode("utf-8", "replace") if first else "#!"
        return f"ERR Unexpected engine in script shebang: {shown}"
    flags: set[bytes] = set()
    for word in words[1:]:
        if not word.startswith(b"flags="):
            return f"ERR Unknown lua shebang option: {word.decode('utf-8', 'replace')}"
        for flag in word[6:].split(b","):
            if not flag:
                continue
            if flag not in _SHEBANG_FLAGS:
                return f"ERR Unexpected flag in script shebang: {flag.decode('utf-8', 'replace')}"
            flags.add(flag)
    rest = b"" if end < 0 else body[end:]
    return frozenset(flags), rest


def engine_of(core: Core) -> ScriptEngine:
    """The core's script engine, made on first use (a Lua state costs ~1 MB)."""
    engine = core.scripts
    if not isinstance(engine, ScriptEngine):
        engine = core.scripts = ScriptEngine(core)
    return engine


def in_script(ctx: Context) -> bool:
    """Whether ``ctx`` is the context of a running script's ``redis.call`` (Redis's
    CLIENT_SCRIPT: SORT then sorts a set it would leave unsorted)."""
    engine = ctx.core.scripts
    return (isinstance(engine, ScriptEngine) and engine.running is not None
            and engine.running.ctx is ctx)
