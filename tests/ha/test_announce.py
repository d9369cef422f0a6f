"""What a replica announces to its primary (and so to Sentinel): replica-announce-ip/port,
replica-priority and replica-announced, shown in INFO replication as Redis shows them."""

from __future__ import annotations

import time

from helpers import HotkvProcess, free_port


def test_replica_announces_its_address_and_priority() -> None:
    primary = HotkvProcess().start()
    announced = free_port()
    replica = HotkvProcess("--replicaof", "127.0.0.1", str(primary.port),
                           "--replica-announce-ip", "10.1.2.3", "--replica-announce-port", str(announced),
                           "--replica-priority", "7", "--replica-announced", "no").start()
    try:
        deadline = time.monotonic() + 15
        while primary.client().info("replication")["connected_slaves"] != 1:
            assert time.monotonic() < deadline, "the replica never connected"
            time.sleep(0.05)
        slave0 = primary.client().info("replication")["slave0"]
        assert slave0["ip"] == "10.1.2.3" and slave0["port"] == announced
        info = replica.client().info("replication")
        assert info["slave_priority"] == 7 and info["replica_announced"] == 0
        c = replica.client(decode_responses=True)
        assert c.config_get("slave-priority") == {"slave-priority": "7"}
        assert c.config_set("replica-priority", "0")
        assert c.info("replication")["slave_priority"] == 0
    finally:
        replica.cleanup()
        primary.cleanup()
