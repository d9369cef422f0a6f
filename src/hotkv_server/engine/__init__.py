"""The engine: Core, Context, the dispatch point, the command table, errors and arguments.

``server/`` (network and lifecycle) calls into it; ``commands/``, ``persistence/`` and
``replication/`` build on it; ``stores/`` sits below it. See docs/architecture.md.
"""
