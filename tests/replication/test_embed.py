"""A store by text on the primary reaches a replica with no embedder as the computed
vector (the effect carries it), and EMBED.DEDUP writes reach it as effects too."""

from __future__ import annotations

import redis

from helpers import HotkvProcess, record, records
from replication.rhelpers import replica_of, servers, wait_synced


def test_replica_without_an_embedder_gets_the_vectors() -> None:
    primary = HotkvProcess().start()
    try:
        with servers(replica_of(primary, "--embed-wordllama", "no")) as (replica,):
            pc, rc = primary.client(), replica.client()
            wait_synced(pc, rc)
            pc.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "wordllama")
            pc.execute_command("AMEM.SEM.STORE", "kb", "tea", "Green tea is served in the lobby.")
            pc.execute_command("AMEM.SEM.STORE", "kb", "bus", "The shuttle bus leaves at six.")
            pc.execute_command("EMBED.DEDUP.PUT", "dd", "h", "m", b"\x01\x02")
            assert pc.execute_command("WAIT", 1, 10000) == 1
            assert rc.info("amem")["embed_embedders"] == "none"
            for ident in ("tea", "bus"):
                mine = record(pc.execute_command("AMEM.SEM.GET", "kb", ident, "WITHVECTOR"))
                theirs = record(rc.execute_command("AMEM.SEM.GET", "kb", ident, "WITHVECTOR"))
                assert theirs == mine
            assert record(rc.execute_command("AMEM.SEM.INFO", "kb"))[b"embedder"] == b"wordllama"
            tea = record(pc.execute_command("AMEM.SEM.GET", "kb", "tea", "WITHVECTOR"))[b"vector"]
            hit = records(rc.execute_command("AMEM.SEM.RECALL", "kb", 1, "FP32", tea))[0]
            assert hit[b"id"] == b"tea"
            assert rc.execute_command("EMBED.DEDUP.GET", "dd", "h") == b"\x01\x02"
            try:
                rc.execute_command("AMEM.SEM.RECALL", "kb", 1, "TEXT", "tea")
                raise AssertionError("a replica without an embedder cannot embed a query")
            except redis.ResponseError as exc:
                assert "embedder 'wordllama' is not configured on this server" in str(exc)
    finally:
        primary.cleanup()
