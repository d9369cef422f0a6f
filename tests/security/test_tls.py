"""TLS: redis-py with ssl=True and a test CA, plaintext refused, client certificates."""

from __future__ import annotations

import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from helpers import HotkvProcess, free_port


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throw-away CA, a server certificate for 127.0.0.1 and a client certificate."""
    d = tmp_path_factory.mktemp("pki")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=hotkv-test-ca",
             "-keyout", "ca.key", "-out", "ca.crt", cwd=d)
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                 "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-extfile", "san.cnf", "-out", f"{name}.crt", cwd=d)
    return d


def _server(pki: Path, auth_clients: str) -> HotkvProcess:
    return HotkvProcess(
        "--tls-port", str(free_port()),
        "--tls-cert-file", str(pki / "server.crt"),
        "--tls-key-file", str(pki / "server.key"),
        "--tls-ca-cert-file", str(pki / "ca.crt"),
        "--tls-auth-clients", auth_clients,
    ).start()


@pytest.fixture(scope="module")
def tls_server(pki: Path) -> Iterator[HotkvProcess]:
    proc = _server(pki, "no")
    yield proc
    proc.cleanup()


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_over_tls(tls_server: HotkvProcess, pki: Path, protocol: int) -> None:
    client = redis.Redis(host="127.0.0.1", port=tls_server.tls_port, ssl=True, protocol=protocol,
                         ssl_ca_certs=str(pki / "ca.crt"))
    assert client.set("secret", "over tls") is True
    assert client.get("secret") == b"over tls"
    # the same data through the plaintext port: one server, two doors
    assert tls_server.client().get("secret") == b"over tls"


def test_plaintext_client_on_tls_port_is_refused(tls_server: HotkvProcess) -> None:
    with socket.create_connection(("127.0.0.1", tls_server.tls_port), timeout=3) as sock:
        sock.sendall(b"PING\r\n")
        try:
            data = sock.recv(100)
        except ConnectionResetError:
            data = b""
    assert b"PONG" not in data


def test_client_certificate_required(pki: Path) -> None:
    proc = _server(pki, "yes")
    try:
        anonymous = redis.Redis(host="127.0.0.1", port=proc.tls_port, ssl=True,
                                ssl_ca_certs=str(pki / "ca.crt"))
        with pytest.raises((redis.ConnectionError, ssl.SSLError)):
            anonymous.ping()
        with_cert = redis.Redis(host="127.0.0.1", port=proc.tls_port, ssl=True,
                                ssl_ca_certs=str(pki / "ca.crt"),
                                ssl_certfile=str(pki / "client.crt"), ssl_keyfile=str(pki / "client.key"))
        assert with_cert.ping() is True
    finally:
        proc.cleanup()


def test_config_set_tls_at_run_time(pki: Path) -> None:
    """A server started without TLS gets a TLS port by CONFIG SET, as Redis: the certificate
    is checked first (a bad one is refused and nothing changes), then the port listens;
    moving tls-port closes the old one."""
    proc = HotkvProcess().start()
    try:
        admin = proc.client()
        with pytest.raises(redis.ResponseError, match="Unable to update TLS configuration"):
            admin.config_set("tls-cert-file", str(pki / "server.crt"), "tls-key-file",
                             str(pki / "ca.key"), "tls-auth-clients", "no",
                             "tls-port", str(free_port()))
        assert admin.config_get("tls-port") in ({"tls-port": "0"}, {b"tls-port": b"0"})
        first = free_port()
        assert admin.config_set("tls-cert-file", str(pki / "server.crt"), "tls-key-file",
                                str(pki / "server.key"), "tls-auth-clients", "no",
                                "tls-port", str(first)) is True
        time.sleep(0.2)
        secure = redis.Redis(host="127.0.0.1", port=first, ssl=True,
                             ssl_ca_certs=str(pki / "ca.crt"))
        assert secure.ping() is True
        second = free_port()
        assert admin.config_set("tls-port", str(second)) is True
        time.sleep(0.2)
        assert redis.Redis(host="127.0.0.1", port=second, ssl=True,
                           ssl_ca_certs=str(pki / "ca.crt")).ping() is True
        assert secure.ping() is True  # connected clients stay
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", first), timeout=1).close()
        secure.close()
        admin.close()
    finally:
        proc.cleanup()
