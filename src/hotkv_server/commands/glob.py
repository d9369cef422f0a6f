"""Moved to ``hotkv_server.engine.glob`` (pub/sub in the engine matches patterns too);
importable from here for the command modules written before the move."""

from __future__ import annotations

from hotkv_server.engine.glob import compile_glob, glob_match

__all__ = ["compile_glob", "glob_match"]
