"""Sinks of the job, in the job's process (and, for the table files, its executors): Spark's Parquet file
sink, or a Delta or Iceberg table committed exactly once per micro-batch, after the user's optional
transform.

- `config`: the sink's settings from the job's flags; `transform`: the user's function;
- `stream`: the writer into the sink and the per-batch protocol of the tables (`TableSink`);
- `spark_tables`: Spark's own Delta and Iceberg writers instead (`--table-writer spark`), and their Spark
  configuration;
- `target`: what a table format implements (`TableTarget`), done by `delta` and `iceberg`;
- `table_files`: executor side, a batch's rows as Parquet data files;
- pure helpers: `table_schema` (Arrow types), `paths` (folders, names), `stats` (Delta statistics),
  `compaction` (which files to combine); `location`: where files live, for pyarrow, delta-rs and pyiceberg.

The job uses `check(args)` before Spark starts, `session_conf(cfg, endpoint)` when it starts Spark,
`writer(df, cfg, endpoint)` to build the stream's writer and `start(writer, cfg)` to start it; for a direct
write (`cfg.direct_writes`), `direct_table(schema, cfg, endpoint)` instead of `writer`.
"""
from __future__ import annotations

from ..core.endpoint import Endpoint
from .config import SinkConfig, sink_config
from .target import SinkError

__all__ = ["SinkConfig", "SinkError", "check", "direct_table", "session_conf", "start", "writer"]


def check(args) -> SinkConfig:
    """Everything that can be checked without Spark; raises SinkError naming the flag."""
    from .transform import load_transform

    cfg = sink_config(args)
    if cfg.transform:
        load_transform(cfg.transform)
    return cfg


def writer(df, cfg: SinkConfig, endpoint: Endpoint):
    """The DataStreamWriter from the source DataFrame into the sink, not yet started."""
    from .stream import sink_writer

    return sink_writer(df, cfg, endpoint)


def direct_table(schema, cfg: SinkConfig, endpoint: Endpoint):
    """The table (created or checked for the output's `schema`) that the source's read tasks write into:
    its `spec` for them, and `writer(df)` for the stream of the files they wrote (sinks/stream.DirectTable)."""
    from .stream import DirectTable

    return DirectTable(schema, cfg, endpoint)


def session_conf(cfg: SinkConfig, endpoint: Endpoint) -> dict[str, str]:
    """Spark settings the sink needs before the session starts (Spark's table writers only)."""
    from .spark_tables import session_conf as conf

    return conf(cfg, endpoint)


def start(writer, cfg: SinkConfig):
    """Start the streaming query built by `writer`."""
    from .spark_tables import start as start_table, uses_spark_writer

    return start_table(writer, cfg) if uses_spark_writer(cfg) else writer.start()
