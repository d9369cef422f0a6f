"""Moved to ``hotkv_server.engine.config`` (commands and subsystems read the config, and they
must not import the network layer). Kept importable for code written before the move;
new code imports ``hotkv_server.engine.config``."""

from __future__ import annotations

from hotkv_server.engine.config import (
    DIRECTIVES,
    Config,
    ConfigError,
    Directive,
    apply_text,
    load_config,
    output_limits,
    parse_memory,
    quote_if_needed,
    split_line,
)

__all__ = [
    "DIRECTIVES", "Config", "ConfigError", "Directive", "apply_text", "load_config",
    "output_limits", "parse_memory", "quote_if_needed", "split_line",
]
