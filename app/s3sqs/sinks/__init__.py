"""Sinks of the job: Spark's Parquet file sink, or a Delta or Iceberg table committed exactly once per
micro-batch, after the user's optional transform.

The job uses three functions:
- `add_arguments(parser)`: the flags (--sink, --table, --transform, --target-file-size, --catalog, ...);
- `check(args)`: validates them and imports the transform, before Spark starts;
- `writer(df, cfg, endpoint_url, region)`: applies the transform and returns the streaming writer into the
  sink, for the job to give its checkpoint and trigger and start.
"""
from __future__ import annotations

import argparse

from .config import SinkConfig, add_arguments, sink_config
from .layout import SinkError

__all__ = ["SinkConfig", "SinkError", "add_arguments", "check", "writer"]


def check(args: argparse.Namespace) -> SinkConfig:
    """Everything that can be checked without Spark; raises SinkError naming the flag."""
    from .transform import load_transform

    cfg = sink_config(args)
    if cfg.transform:
        load_transform(cfg.transform)
    return cfg


def writer(df, cfg: SinkConfig, endpoint_url: str | None, region: str | None):
    """The DataStreamWriter from the source DataFrame into the sink, not yet started."""
    from .stream import sink_writer

    return sink_writer(df, cfg, endpoint_url, region)
