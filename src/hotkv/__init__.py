"""hotkv: an in-memory Redis-protocol server that gives AI agents their memory."""

__version__ = "0.1.0"
