"""Network and lifecycle: configuration, connections, reply encoding. No memory logic."""
