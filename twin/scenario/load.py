"""Reading a scenario file: the bounded YAML reader lives in ``twin.yamlfile`` (no pydantic, so that a command
can refuse an unreadable file before the schema is imported); this module keeps its old names."""

from twin.yamlfile import MAX_DEPTH, MAX_EXPANDED_NODES, MAX_FILE_BYTES, decode, parse_yaml, read_text

__all__ = ["MAX_DEPTH", "MAX_EXPANDED_NODES", "MAX_FILE_BYTES", "decode", "parse_yaml", "read_text"]
