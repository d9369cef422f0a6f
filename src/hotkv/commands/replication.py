"""Replication commands: REPLICAOF, ROLE, WAIT, and the primary side of PSYNC (being written)."""
