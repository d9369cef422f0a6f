"""The server process: configuration file and flags, bad input at start, signals, redis-cli."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from helpers import ROOT, HotkvProcess, free_port


def _run(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-m", "hotkv_server", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_unknown_directive_flag_stops_the_start() -> None:
    done = _run("--port", "0", "--no-such-thing", "1")
    assert done.returncode == 1
    assert "unknown directive 'no-such-thing'" in done.stderr


def test_bad_value_names_the_file_and_line(tmp_path: Path) -> None:
    conf = tmp_path / "hotkv.conf"
    conf.write_text("# comment\nport 0\nappendfsync sometimes\n")
    done = _run(str(conf))
    assert done.returncode == 1
    assert f"{conf}:3" in done.stderr
    assert "'appendfsync' ('sometimes')" in done.stderr
    assert "must be one of the following: everysec, always, no" in done.stderr


def test_port_in_use_is_a_clear_error() -> None:
    first = HotkvProcess().start()
    try:
        done = _run("--port", str(first.port), "--bind", "127.0.0.1", "--appendonly", "no")
        assert done.returncode == 1
        assert "address already in use" in done.stderr.lower()
    finally:
        first.cleanup()


def test_config_file_and_flags_combine(tmp_path: Path) -> None:
    conf = tmp_path / "hotkv.conf"
    conf.write_text('maxclients 77\nslowlog-max-len 5\nrequirepass "pass word"\n')
    proc = HotkvProcess("--slowlog-max-len", "9", config_file=str(conf)).start()
    try:
        client = proc.client(password="pass word", decode_responses=True)
        assert client.config_get("maxclients") == {"maxclients": "77"}
        assert client.config_get("slowlog-max-len") == {"slowlog-max-len": "9"}
        client.config_set("maxclients", "88")
        assert client.config_rewrite() in (True, "OK")
        assert "maxclients 88" in conf.read_text()
    finally:
        proc.cleanup()


def test_sigterm_shuts_down_cleanly() -> None:
    proc = HotkvProcess().start()
    assert proc.proc is not None
    proc.proc.send_signal(signal.SIGTERM)
    assert proc.proc.wait(15) == 0
    assert "bye" in proc.log()
    proc.cleanup()


def test_start_log_line_names_version_port_and_config() -> None:
    proc = HotkvProcess().start()
    try:
        line = next(line for line in proc.log().splitlines() if "ready to accept" in line)
        assert "hotkv 0.1.0" in line and f"port {proc.port}" in line and "config none" in line
    finally:
        proc.cleanup()


def test_hotkv_server_script_is_installed() -> None:
    script = Path(sys.executable).with_name("hotkv-server")
    if not script.exists():
        pytest.fail("hotkv-server is not installed in this environment (pip install -e .)")
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=20)
    assert done.returncode == 0 and "hotkv-server v=0.1.0" in done.stdout


def test_idle_timeout_closes_clients() -> None:
    proc = HotkvProcess("--timeout", "1").start()
    try:
        import socket

        with socket.create_connection(("127.0.0.1", proc.port), timeout=5) as sock:
            time.sleep(2.5)
            sock.sendall(b"PING\r\n")
            try:
                data = sock.recv(100)
            except ConnectionResetError:
                data = b""
        assert data == b""
    finally:
        proc.cleanup()


def _cli(port: int, *args: str) -> str:
    return subprocess.run(["redis-cli", "-p", str(port), *args], capture_output=True, text=True,
                          timeout=20, check=True).stdout


def test_redis_cli_one_shot_and_no_raw(server: HotkvProcess) -> None:
    assert _cli(server.port, "PING") == "PONG\n"
    assert _cli(server.port, "SET", "greeting", "hello world") == "OK\n"
    assert _cli(server.port, "--no-raw", "GET", "greeting") == '"hello world"\n'
    assert _cli(server.port, "--no-raw", "INCR", "counter") == "(integer) 1\n"
    assert _cli(server.port, "--no-raw", "GET", "missing") == "(nil)\n"
    assert _cli(server.port, "--no-raw", "NOPE") == (
        "(error) ERR unknown command 'NOPE', with args beginning with: \n"
    )
    listing = _cli(server.port, "--no-raw", "MGET", "greeting", "missing")
    assert listing == '1) "hello world"\n2) (nil)\n'


def test_redis_cli_resp3_map(server: HotkvProcess) -> None:
    out = _cli(server.port, "-3", "--no-raw", "HELLO", "3")
    assert '1# "server" => "redis"' in out
    assert '3# "proto" => (integer) 3' in out


def test_the_contract_walkthrough_through_redis_cli(server: HotkvProcess) -> None:
    lines = [
        ["AMEM.CONV.CREATE", "session-42", "WINDOW", "50", "TTL", "86400"],
        ["AMEM.CONV.APPEND", "session-42", "user", "My invoice shows the wrong VAT number."],
        ["AMEM.WORK.SET", "session-42", "ticket", "INV-1932", "TTL", "3600"],
        ["AMEM.EPIS.LOG", "agent-support", "action", "Looked up invoice INV-1932"],
        ["AMEM.SEM.CREATE", "support-kb", "3"],
        ["AMEM.SEM.STORE", "support-kb", "vat-policy", "VAT details can be corrected within 30 days.",
         "0.1", "0.2", "0.3"],
        ["AMEM.SEM.RECALL", "support-kb", "3", "0.1", "0.2", "0.3"],
        ["AMEM.CONV.WINDOW", "session-42", "10"],
    ]
    _cli(server.port, "FLUSHALL")
    outputs = [_cli(server.port, "--no-raw", *line) for line in lines]
    # the HotKV dialect's replies: every write of the tour answers OK
    assert outputs[:6] == ["OK\n"] * 6
    recall = outputs[6].splitlines()
    assert any('"vat-policy"' in line for line in recall)
    similarity = next(i for i, line in enumerate(recall) if '"similarity"' in line)
    value = recall[similarity + 1].split(")", 1)[1].strip().strip('"')
    assert abs(float(value) - 1.0) < 1e-6
    assert '"My invoice shows the wrong VAT number."' in outputs[7]
    assert '"user"' in outputs[7]
    # the same script piped into one redis-cli session, as a user would paste it
    script = "\n".join(" ".join(f'"{w}"' if " " in w else w for w in line) for line in lines) + "\n"
    _cli(server.port, "FLUSHALL")
    piped = subprocess.run(["redis-cli", "-p", str(server.port)], input=script, capture_output=True,
                           text=True, timeout=20, check=True).stdout
    assert "ERR" not in piped and "vat-policy" in piped


def test_python_m_hotkv_with_free_port() -> None:
    port = free_port()
    proc = HotkvProcess(port=port).start()
    try:
        assert proc.port == port
        assert proc.client().ping() is True
    finally:
        proc.cleanup()


def test_bad_acl_rule_in_user_directive_stops_the_start() -> None:
    done = _run("--port", "0", "--appendonly", "no", "--user", "bob", "on", "+nosuchcommand")
    assert done.returncode == 1
    assert "cannot load ACL users" in done.stderr and "+nosuchcommand" in done.stderr
    assert "Traceback" not in done.stderr


def test_idle_timeout_spares_a_client_blocked_in_wait() -> None:
    proc = HotkvProcess("--timeout", "1").start()
    try:
        import socket

        with socket.create_connection(("127.0.0.1", proc.port), timeout=10) as sock:
            sock.sendall(b"WAIT 1 2500\r\n")  # no replica: answers 0 after 2.5 s
            assert sock.recv(100) == b":0\r\n"
            time.sleep(0.5)  # the reply counts as activity: still connected a while later
            sock.sendall(b"PING\r\n")
            assert sock.recv(100) == b"+PONG\r\n"
    finally:
        proc.cleanup()


def test_scripts_serve_resolves_paths_against_the_callers_directory(tmp_path: Path) -> None:
    """``scripts/serve ./my.conf --dir ./data`` from any directory: the config file is found
    and the data lands there, not in the checkout; the start-up log names the directory."""
    port = free_port()
    (tmp_path / "my.conf").write_text(f"port {port}\nappendonly yes\nlogfile ./hotkv.log\n")
    before = set(ROOT.iterdir())
    proc = subprocess.Popen([str(ROOT / "scripts" / "serve"), "./my.conf", "--dir", "./data",
                             "--bind", "127.0.0.1"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        logfile = tmp_path / "hotkv.log"
        deadline = time.monotonic() + 60
        while "ready to accept" not in (logfile.read_text() if logfile.exists() else ""):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "scripts/serve did not start the server"
            time.sleep(0.05)
        client = redis.Redis(port=port)
        client.set("where", "here")
        client.close()
        line = next(x for x in logfile.read_text().splitlines() if "ready to accept" in x)
        assert f"config {tmp_path / 'my.conf'}, dir {tmp_path / 'data'})" in line
        assert (tmp_path / "data" / "appendonlydir").is_dir()
        assert set(ROOT.iterdir()) == before  # nothing written into the checkout
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stderr:
            proc.stderr.close()


def test_config_rewrite_writes_the_live_users_with_hashed_passwords(tmp_path: Path) -> None:
    """As Redis 7: CONFIG REWRITE writes the users as they are now (ACL SETUSER included),
    each password as its SHA-256 (``#...``), never in clear, and a restart from the
    rewritten file lets the same users in with the same rights."""
    import hashlib

    conf = tmp_path / "hotkv.conf"
    conf.write_text("user alice on >s3cret-alice ~a:* +get +set\n")
    proc = HotkvProcess(config_file=str(conf)).start()
    try:
        admin = proc.client(decode_responses=True)
        admin.execute_command("ACL", "SETUSER", "bob", "on", ">hunter2-bob", "~b:*", "+@read")
        admin.set("b:1", "one")
        assert admin.config_rewrite() in (True, "OK")
    finally:
        proc.cleanup()
    text = conf.read_text()
    assert "s3cret-alice" not in text and "hunter2-bob" not in text
    for password in ("s3cret-alice", "hunter2-bob"):
        assert "#" + hashlib.sha256(password.encode()).hexdigest() in text
    again = HotkvProcess(config_file=str(conf)).start()
    try:
        bob = again.client(decode_responses=True)
        assert bob.execute_command("AUTH", "bob", "hunter2-bob") in (True, "OK")
        with pytest.raises(redis.ResponseError, match=r"no permissions to run the 'set' command"):
            bob.set("b:1", "two")
        alice = again.client(decode_responses=True)
        with pytest.raises(redis.AuthenticationError):
            alice.execute_command("AUTH", "alice", "hunter2-bob")
        assert alice.execute_command("AUTH", "alice", "s3cret-alice") in (True, "OK")
        assert alice.set("a:1", "x") and alice.get("a:1") == "x"
    finally:
        again.cleanup()
