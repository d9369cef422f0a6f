"""A/B of benchmarks/inprocess.py's rows in ONE process, for a shared, loaded machine.

Two copies of the package, renamed ``hotkv_old`` and ``hotkv_new``, are driven alternately
in small blocks (about 4,000 commands each), so load from other processes hits both alike;
the table gives the best block of each side. Separate runs of inprocess.py moved by 20-50%
between runs on the shared 2-core machine; this design moves by a few percent.

    mkdir -p /tmp/ab && cp -r OLD_TREE/src/hotkv_server /tmp/ab/hotkv_old \
        && cp -r src/hotkv_server /tmp/ab/hotkv_new
    grep -rl hotkv_server /tmp/ab/hotkv_old | xargs sed -i 's/hotkv_server/hotkv_old/g'
    grep -rl hotkv_server /tmp/ab/hotkv_new | xargs sed -i 's/hotkv_server/hotkv_new/g'
    AB_PATH=/tmp/ab .venv/bin/python benchmarks/ab_inprocess.py ping,set,get,wset,wget,capp 30 [--aof]

Every row of benchmarks/inprocess.py is known (``hset,lpush,zadd,zrangebyscore,evalsha``
...), with the same set-up data and the same random requests (its ``reads_for``).
"""
import importlib
import os
import sys
import tempfile
import time

sys.path.insert(0, os.environ.get("AB_PATH", "/tmp/ab"))

class FakeTransport:
    def __init__(self): self.last = b""
    def write(self, data): self.last = data
    def get_extra_info(self, name): return ("127.0.0.1", 40000)
    def set_write_buffer_limits(self, high): pass
    def get_write_buffer_size(self): return 0
    def close(self): pass
    def abort(self): pass
    def pause_reading(self): pass
    def resume_reading(self): pass

def request(*words):
    return b"".join([b"*%d\r\n" % len(words)] + [b"$%d\r\n%b\r\n" % (len(w), w) for w in words])
# the rows, their set-up and their requests are inprocess.py's (one definition of each)
sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))
import inprocess  # noqa: E402

ROWS = inprocess.ROWS

async def build(pkg, aof):
    app = importlib.import_module(pkg + ".server.app")
    try:
        cfgmod = importlib.import_module(pkg + ".engine.config")
    except ImportError:
        cfgmod = importlib.import_module(pkg + ".server.config")
    conn = importlib.import_module(pkg + ".server.connection")
    d = tempfile.mkdtemp()
    config = cfgmod.load_config(["--port", "0", "--dir", d, "--save", "", "--appendonly", "yes" if aof else "no", "--appendfsync", "everysec"])
    server = app.Server(config)
    await server._open_subsystems()
    for sub in server.subsystems:
        s = getattr(sub, "started", None)
        if s is not None:
            await s()
    p = conn.ClientProtocol(server.core)
    p.connection_made(FakeTransport())
    p.data_received(request(b"AMEM.CONV.CREATE", b"bench"))
    for r in ("set", "wset"):
        p.data_received(ROWS[r])
    for setup in inprocess.SETUP.values():
        for req in setup:
            p.data_received(req)
    conn.end_turn(server.core)
    core = server.core
    t = getattr(getattr(core, "turn", None), "end", None)
    end = t if t is not None else (lambda: conn.end_turn(core))
    def turn(read):
        p.data_received(read)
        end()
    return turn, p

async def main():
    aof = "--aof" in sys.argv
    rows = sys.argv[1].split(",")
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 40
    sides = {"old": await build("hotkv_old", aof), "new": await build("hotkv_new", aof)}
    pt = time.process_time
    print(f"AOF {'everysec' if aof else 'off'}; min of {blocks} interleaved blocks, CPU us per command")
    print("| row | before | after | change |\n|---|---:|---:|---:|")
    for row in rows:
        for pipeline in (16, 1):
            n = max(1, 4000 // pipeline)
            reads = inprocess.reads_for(row, pipeline, 1, n)
            best = {"old": 1e9, "new": 1e9}
            for b in range(blocks):
                for name in (("old", "new") if b % 2 else ("new", "old")):
                    turn, p = sides[name]
                    t = pt()
                    for i in range(n):
                        turn(reads[i % len(reads)])
                    best[name] = min(best[name], (pt() - t) / (n * pipeline))
                    assert not p.transport.last.startswith(b"-"), p.transport.last
            o, w = best["old"] * 1e6, best["new"] * 1e6
            print(f"| {row} -P {pipeline} | {o:.2f} us | {w:.2f} us | {100 * (w - o) / o:+.1f}% |", flush=True)

if __name__ == "__main__":
    import uvloop

    uvloop.run(main())
