"""The typed view of the configuration: one attribute per directive, ``config.maxmemory``.

``engine.config.Config`` is a ``Settings``: the config file, the command line and CONFIG
SET store each directive's parsed value in its attribute (the directive's name with ``_``
for ``-``: ``client-output-buffer-limit`` is ``config.client_output_buffer_limit``), so
every reader sees a CONFIG SET at once and mypy knows each value's type. The attributes
are the only storage (``Config.values`` is a by-name view of them, for code that handles
any directive: CONFIG GET/SET/REWRITE).

A directive's type is what its parser in ``engine/config.py``'s ``DIRECTIVES`` returns; a
choice of words is a ``Literal`` below, which the parser reads its choices from.
tests/engine/test_settings.py fails when a directive has no attribute here, or one whose
type disagrees with what the parser returns.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["AclPubsubDefault", "EvictionPolicy", "FsyncPolicy", "LogLevel", "Pooling", "Settings",
           "TlsAuthClients", "WordllamaDim", "attribute"]

# the choices in Redis 7's order, which its CONFIG SET error lists them in
FsyncPolicy = Literal["everysec", "always", "no"]
EvictionPolicy = Literal["volatile-lru", "volatile-random", "volatile-ttl", "allkeys-lru",
                         "allkeys-random", "noeviction"]
LogLevel = Literal["debug", "verbose", "notice", "warning", "nothing"]
TlsAuthClients = Literal["no", "yes", "optional"]
AclPubsubDefault = Literal["allchannels", "resetchannels"]
Pooling = Literal["mean", "cls"]
WordllamaDim = Literal[64, 128, 256]


def attribute(name: str) -> str:
    """The attribute of the directive ``name`` (``maxmemory-policy`` -> ``maxmemory_policy``)."""
    return name.replace("-", "_")


class Settings:
    """Every directive's current value, typed (the order of ``engine.config.DIRECTIVES``)."""

    __slots__ = ()

    bind: list[str]
    port: int
    dir: str
    appendonly: bool
    appendfilename: str
    appendfsync: FsyncPolicy
    aof_load_truncated: bool
    auto_aof_rewrite_percentage: int
    auto_aof_rewrite_min_size: int
    requirepass: str
    #: each ``user`` line's words (a repeatable directive: one entry per line)
    user: list[list[str]]
    aclfile: str
    protected_mode: bool
    maxclients: int
    maxmemory: int
    maxmemory_clients: int
    maxmemory_policy: EvictionPolicy
    proto_max_bulk_len: int
    client_query_buffer_limit: int
    timeout: int
    tcp_keepalive: int
    #: (host, port) of the primary followed, None on a primary
    replicaof: tuple[str, int] | None
    masterauth: str
    masteruser: str
    replica_read_only: bool
    repl_backlog_size: int
    loglevel: LogLevel
    logfile: str
    slowlog_log_slower_than: int
    slowlog_max_len: int
    hz: int
    databases: int
    #: the canonical text (``engine.config.output_limits`` reads one class's limits)
    client_output_buffer_limit: str
    tls_port: int
    tls_cert_file: str
    tls_key_file: str
    tls_ca_cert_file: str
    tls_auth_clients: TlsAuthClients
    save: str
    #: the class bits (``engine.notify_flags``)
    notify_keyspace_events: int
    acl_pubsub_default: AclPubsubDefault
    acllog_max_len: int
    min_replicas_to_write: int
    min_replicas_max_lag: int
    repl_ping_replica_period: int
    replica_serve_stale_data: bool
    maxmemory_samples: int
    busy_reply_threshold: int
    latency_tracking: bool
    daemonize: bool
    replica_priority: int
    replica_announce_ip: str
    replica_announce_port: int
    replica_announced: bool
    hash_max_listpack_entries: int
    hash_max_listpack_value: int
    zset_max_listpack_entries: int
    zset_max_listpack_value: int
    set_max_intset_entries: int
    list_max_listpack_size: int
    list_compress_depth: int
    embed_threads: int
    embed_timeout_ms: int
    embed_cache_max_memory: int
    embed_wordllama: bool
    embed_wordllama_dim: WordllamaDim
    embed_openai_url: str
    embed_openai_model: str
    embed_openai_dim: int
    embed_openai_api_key_env: str
    embed_openai_api_key_file: str
    embed_openai_batch_size: int
    embed_openai_timeout_ms: int
    embed_openai_retries: int
    embed_openai_backoff_ms: int
    embed_openai_send_dimensions: bool
    embed_fastembed_path: str
    embed_fastembed_dim: int
    embed_fastembed_model_file: str
    embed_fastembed_pooling: Pooling
    cluster_enabled: bool
    cluster_config_file: str
    cluster_require_full_coverage: bool
    cluster_announce_ip: str
    cluster_announce_port: int
