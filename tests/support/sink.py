"""Tests read sinks with the same code the demo uses."""
from ops.sink import committed_files, committed_rows  # noqa: F401
