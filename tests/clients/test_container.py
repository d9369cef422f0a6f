"""The container, checked without a docker engine: the Dockerfile and docker-compose.yml
read statically, then the image's own ENTRYPOINT and HEALTHCHECK commands run here, as the
container would run them, against the real server they start."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import yaml

from helpers import ROOT, free_port, quick_retry
from hotkv_server.clients.entrypoint import refuse_open, server_arguments
from hotkv_server.engine.config import DIRECTIVES

Instruction = tuple[str, str]


def dockerfile() -> list[Instruction]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    instructions: list[Instruction] = []
    pending = ""
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, rest = whole.partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
    assert not pending, "Dockerfile ends inside a continued line"
    return instructions


def final_stage() -> list[Instruction]:
    instructions = dockerfile()
    last_from = max(i for i, (keyword, _) in enumerate(instructions) if keyword == "FROM")
    return instructions[last_from:]


def exec_form(text: str) -> list[str]:
    value = json.loads(text)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), text
    return value


def one(stage: list[Instruction], keyword: str) -> str:
    found = [rest for kw, rest in stage if kw == keyword]
    assert len(found) == 1, f"expected one {keyword}, found {found}"
    return found[0]


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, rest in final_stage():
        if keyword == "ENV":
            for pair in rest.split():
                name, _, value = pair.partition("=")
                env[name] = value
    return env


def entrypoint_command() -> list[str]:
    stage = final_stage()
    command = exec_form(one(stage, "ENTRYPOINT")) + exec_form(one(stage, "CMD"))
    return [sys.executable if part == "python" else part for part in command]


def healthcheck_command() -> list[str]:
    options, _, command = one(final_stage(), "HEALTHCHECK").partition("CMD ")
    assert "--interval=" in options and "--timeout=" in options
    return [sys.executable if part == "python" else part for part in exec_form(command)]


# --- static checks -------------------------------------------------------------------
def test_dockerfile_shape() -> None:
    instructions = dockerfile()
    for keyword, rest in instructions:
        if keyword == "FROM":
            assert rest.split()[0].startswith("python:3.11-slim"), rest
    stage = final_stage()
    user = one(stage, "USER")
    assert user not in ("root", "0") and "useradd" in one(stage, "RUN") and user in one(stage, "RUN")
    assert exec_form(one(stage, "VOLUME")) == ["/data"]
    assert one(stage, "EXPOSE") == "6379"
    assert image_env()["HOTKV_DIR"] == "/data" and image_env()["HOTKV_PORT"] == "6379"
    assert entrypoint_command()[1:] == ["-m", "hotkv_server.clients.entrypoint"]
    assert healthcheck_command()[1:] == ["-m", "hotkv_server.clients.healthcheck"]
    # what the build stage copies exists, and .dockerignore does not hide it
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    for keyword, rest in instructions:
        if keyword == "COPY" and not rest.startswith("--from"):
            for source in rest.split()[:-1]:
                assert (ROOT / source).exists(), source
                assert source not in ignored, source
    # every HOTKV_ variable the image sets is a server directive
    for name in image_env():
        if name.startswith("HOTKV_"):
            assert name[6:].lower().replace("_", "-") in DIRECTIVES, name


def test_compose_sidecar() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    hotkv, agent = services["hotkv"], services["agent"]
    assert hotkv["build"] == "."
    assert "hotkv-data:/data" in hotkv["volumes"] and "hotkv-data" in compose["volumes"]
    assert agent["network_mode"] == "service:hotkv"
    assert agent["depends_on"]["hotkv"]["condition"] == "service_healthy"
    assert agent["environment"]["HOTKV_URL"].startswith("hotkv://localhost:")
    for name, value in hotkv["environment"].items():
        assert name.startswith("HOTKV_") and name[6:].lower().replace("_", "-") in DIRECTIVES
        assert str(value)
    # the agent's example program at least compiles
    compile(agent["command"][0], "agent", "exec")


def test_compose_builds_every_image_it_runs() -> None:
    """``docker compose up`` must not pull an image named like ours from a registry: every
    service running the project's image builds it from this checkout."""
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    built = {svc["image"] for svc in compose["services"].values() if "build" in svc}
    assert built == {"hotkv:latest"}
    for name, svc in compose["services"].items():
        assert svc.get("image") in built, f"service {name} runs an image nobody builds"
        assert svc.get("build") == ".", f"service {name} does not build its image"
        assert (ROOT / svc["build"] / "Dockerfile").is_file()
    # and the hotkv service's settings pass the entrypoint's no-open-server rule
    env = {k: str(v) for k, v in compose["services"]["hotkv"]["environment"].items()}
    assert refuse_open(server_arguments([], env)) is None


@pytest.mark.parametrize("env", [{}, {"HOTKV_BIND": "0.0.0.0"}, {"HOTKV_BIND": "0.0.0.0 ::"},
                                 {"HOTKV_BIND": "127.0.0.1 0.0.0.0"}, {"HOTKV_REQUIREPASS": ""}])
def test_the_image_refuses_to_serve_the_network_without_a_password(env: dict[str, str]) -> None:
    assert refuse_open(server_arguments([], env)) is not None


@pytest.mark.parametrize("env,argv", [
    ({"HOTKV_REQUIREPASS": "pw"}, []),
    ({}, ["--requirepass", "pw"]),
    ({"HOTKV_BIND": "127.0.0.1 ::1"}, []),  # a sidecar
    ({}, ["--bind", "127.0.0.1"]),
    ({"HOTKV_PROTECTED_MODE": "no"}, []),  # open on purpose
    ({}, ["--aclfile", "/data/users.acl"]),
])
def test_the_image_starts_with_a_password_or_on_the_loopback(env: dict[str, str], argv: list[str]) -> None:
    assert refuse_open(server_arguments(argv, env)) is None


def test_environment_becomes_directives_and_flags_win() -> None:
    args = server_arguments(["--appendfsync", "always"],
                            {"HOTKV_PORT": "7000", "HOTKV_BIND": "127.0.0.1 ::1",
                             "HOTKV_APPENDFSYNC": "no", "HOTKV_URL": "hotkv://x",
                             "HOTKV_MCP_PREFIX": "p", "OTHER": "1"})
    assert args == ["--bind", "0.0.0.0", "--dir", "/data",
                    "--appendfsync", "no", "--bind", "127.0.0.1", "::1", "--port", "7000",
                    "--appendfsync", "always"]


# --- the image's commands, run here --------------------------------------------------
@pytest.fixture
def data_dir() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="hotkv-container-") as path:
        yield path


def run_health(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(healthcheck_command(), env=env, capture_output=True, text=True,
                          timeout=30)


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def start_container(env: dict[str, str]) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(entrypoint_command(), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    # a health check is a Python process of its own (a second under load): run it once the
    # port is open, not every 0.1 s while the server starts
    while not port_open(int(env["HOTKV_PORT"])) and proc.poll() is None:
        assert time.monotonic() < deadline, "the server never listened"
        time.sleep(0.05)
    while run_health(env).returncode != 0:
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"the entrypoint exited with {proc.returncode}: {err}")
        assert time.monotonic() < deadline, "the health check never passed"
        time.sleep(0.1)
    return proc


def container_env(data_dir: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(image_env())
    env.update(PYTHONPATH=str(ROOT / "src"), HOTKV_DIR=data_dir, HOTKV_PORT=str(free_port()),
               HOTKV_BIND="127.0.0.1", HOTKV_LOGFILE=str(Path(data_dir) / "hotkv.log"))
    env.update(extra)
    return env


def test_entrypoint_and_health_check_outside_docker(data_dir: str) -> None:
    env = container_env(data_dir, HOTKV_APPENDFSYNC="always")
    before = run_health(env)
    assert before.returncode == 1 and "not healthy" in before.stderr
    proc = start_container(env)
    try:
        client = redis.Redis(port=int(env["HOTKV_PORT"]))
        assert client.config_get("appendfsync") == {"appendfsync": "always"}
        assert client.config_get("dir")["dir"].rstrip("/") == data_dir.rstrip("/")
        client.execute_command("AMEM.CONV.CREATE", "s")
        client.execute_command("AMEM.CONV.APPEND", "s", "user", "persisted")
        client.close()
        # the entrypoint exec'd the server: the stop signal reaches it directly
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
    assert run_health(env).returncode == 1
    assert any(Path(data_dir).iterdir()), "nothing written to the data directory"
    # a second start on the same volume has the data back
    proc = start_container(env)
    try:
        client = redis.Redis(port=int(env["HOTKV_PORT"]))
        assert client.execute_command("AMEM.CONV.LEN", "s") == 1
        client.close()
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stderr:
            proc.stderr.close()


def test_health_check_uses_the_password(data_dir: str) -> None:
    env = container_env(data_dir, HOTKV_REQUIREPASS="s3cret", HOTKV_APPENDONLY="no")
    proc = start_container(env)  # passes only because the check authenticates
    try:
        without = dict(env)
        del without["HOTKV_REQUIREPASS"]
        result = run_health(without)
        assert result.returncode == 1 and "Authentication" in result.stderr
        wrong = run_health(dict(env, HOTKV_REQUIREPASS="wrong"))
        assert wrong.returncode == 1
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stderr:
            proc.stderr.close()


def test_an_open_container_refuses_to_start(data_dir: str) -> None:
    env = container_env(data_dir, HOTKV_BIND="0.0.0.0")
    done = subprocess.run(entrypoint_command(), env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert done.stderr.startswith("hotkv container: refusing to start without a password")
    assert "HOTKV_REQUIREPASS_FILE" in done.stderr and done.stderr.count("\n") == 1
    assert not (Path(data_dir) / "hotkv.log").exists()  # no server was started


def test_a_password_from_a_secret_file(data_dir: str, tmp_path: Path) -> None:
    secret = tmp_path / "hotkv_password"
    secret.write_text("from-a-secret\n")  # as `echo pw > file` writes it
    env = container_env(data_dir, HOTKV_BIND="0.0.0.0", HOTKV_REQUIREPASS_FILE=str(secret),
                        HOTKV_APPENDONLY="no")
    proc = start_container(env)  # the health check reads the same file
    try:
        port = int(env["HOTKV_PORT"])
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, retry=quick_retry()).ping()
        assert redis.Redis(port=port, password="from-a-secret").ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port, password="from-a-secret\n", retry=quick_retry()).ping()
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stderr:
            proc.stderr.close()
    for content, expected in (("", "is empty"), (None, "cannot read")):
        bad = tmp_path / "bad"
        if content is None:
            bad.unlink(missing_ok=True)
        else:
            bad.write_text(content)
        done = subprocess.run(entrypoint_command(), env=dict(env, HOTKV_REQUIREPASS_FILE=str(bad)),
                              capture_output=True, text=True, timeout=30)
        assert done.returncode == 1 and expected in done.stderr, done.stderr
