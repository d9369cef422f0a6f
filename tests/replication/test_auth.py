"""The replica authenticates to a protected primary with masterauth (and masteruser)."""

from __future__ import annotations

import pytest
import redis

from helpers import HotkvProcess
from replication.rhelpers import info, replica_of, servers, wait_synced, wait_until


def test_masterauth_with_requirepass() -> None:
    with servers(HotkvProcess("--requirepass", "s3cret")) as (primary,):
        pc = primary.client(password="s3cret")
        pc.set("k", "v")
        with servers(replica_of(primary, "--masterauth", "s3cret")) as (replica,):
            rc = replica.client()
            wait_synced(pc, rc)
            assert rc.get("k") == b"v"


def test_masteruser_with_an_acl_user() -> None:
    with servers(HotkvProcess()) as (primary,):
        pc = primary.client()
        pc.execute_command("ACL", "SETUSER", "repl", "on", ">pw", "+psync", "+replconf", "+ping")
        pc.execute_command("ACL", "SETUSER", "default", "off")
        admin = primary.client(username="repl", password="pw")
        with servers(replica_of(primary, "--masteruser", "repl", "--masterauth", "pw")) as (replica,):
            rc = replica.client()
            wait_until(lambda: info(rc, "replication")["master_link_status"] == "up", what="link up")
            assert admin.execute_command("PING") in (True, b"PONG")


def test_a_wrong_password_keeps_the_link_down_and_can_be_fixed() -> None:
    with servers(HotkvProcess("--requirepass", "s3cret")) as (primary,):
        pc = primary.client(password="s3cret")
        pc.set("k", "v")
        with servers(replica_of(primary, "--masterauth", "wrong")) as (replica,):
            rc = replica.client()
            wait_until(lambda: "unable to AUTH to MASTER" in replica.log(), what="AUTH refused")
            fields = info(rc, "replication")
            assert fields["master_link_status"] == "down"
            assert fields["master_link_down_since_seconds"] == -1  # never up yet
            assert rc.get("k") is None
            with pytest.raises(redis.ReadOnlyError):
                rc.set("k", "x")
            rc.config_set("masterauth", "s3cret")  # read at the next attempt
            wait_synced(pc, rc)
            assert rc.get("k") == b"v"


def test_repl_backlog_size_is_settable() -> None:
    with servers(HotkvProcess("--repl-backlog-size", "64kb")) as (primary,):
        pc = primary.client()
        with servers(replica_of(primary)) as (replica,):
            wait_synced(pc, replica.client())
            for i in range(100):
                pc.set(f"k{i}", "x" * 1000)
            assert info(pc, "replication")["repl_backlog_histlen"] == 64 * 1024
            pc.config_set("repl-backlog-size", "20kb")
            fields = info(pc, "replication")
            assert fields["repl_backlog_size"] == 20 * 1024 and fields["repl_backlog_histlen"] == 20 * 1024
            assert fields["repl_backlog_first_byte_offset"] == fields["master_repl_offset"] - 20 * 1024 + 1
