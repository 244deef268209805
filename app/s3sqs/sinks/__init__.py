"""Sinks of the job, in the job's process (and, for the table files, its executors): Parquet files with
Spark's file sink log, or a Delta or Iceberg table, committed exactly once per micro-batch, after the
user's optional transform.

- `config`: the sink's settings from the job's flags; `transform`: the user's function;
- `stream`: the writer into the sink and the per-batch protocol of the tables (`TableSink`);
- `spark_tables`: Spark's own Delta and Iceberg writers instead (`--table-writer spark`), and their Spark
  configuration;
- `target`: what a table format implements (`TableTarget`), done by `delta`, `iceberg` and
  `file_sink_log` (the parquet sink's `_spark_metadata` log, when the read tasks write its files);
- `table_files`: executor side, a batch's rows as Parquet data files;
- pure helpers: `table_schema` (Arrow types), `paths` (folders, names), `stats` (Delta statistics),
  `compaction` (which files to combine); `location`: where files live, for pyarrow, delta-rs and pyiceberg.

The job uses `check(args)` before Spark starts, `session_conf(cfg, endpoint)` when it starts Spark,
`writer(df, cfg, endpoint)` to build the stream's writer and `start(writer, cfg)` to start it; for a direct
write (`cfg.direct_writes`), `direct_table(schema, cfg, endpoint)` instead of `writer`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .target import SinkError

if TYPE_CHECKING:
    from ..core.endpoint import Endpoint
    from .config import SinkConfig

# `config` (SinkConfig) is imported where the job asks for it, not here: executors and Spark's Python
# planners import this package for the table files only, and building the settings' pydantic models costs
# 0.15-0.25 s in each of them.
__all__ = ["SinkError", "check", "direct_table", "direct_write_refusal", "session_conf", "start", "writer"]


def check(args) -> SinkConfig:
    """Everything that can be checked without Spark; raises SinkError naming the flag."""
    from .config import sink_config
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


def direct_write_refusal(schema, cfg: SinkConfig) -> str | None:
    """Why Spark's file sink must write this output of the parquet sink, though `cfg.direct_writes`: an
    --output in a Hadoop scheme pyarrow does not reach, or a column type the read tasks' Parquet writer
    cannot hold. None when they can (and for the tables, whose own checks raise)."""
    from .table_schema import direct_write_refusal as refusal

    if cfg.kind != "parquet":
        return None
    if cfg.output_location is None:
        return f"--output {cfg.output}: the read tasks write local folders and s3:// URIs only"
    return refusal(schema, cfg.partition_by)


def session_conf(cfg: SinkConfig, endpoint: Endpoint) -> dict[str, str]:
    """Spark settings the sink needs before the session starts (Spark's table writers only)."""
    from .spark_tables import session_conf as conf

    return conf(cfg, endpoint)


def start(writer, cfg: SinkConfig):
    """Start the streaming query built by `writer`."""
    from .spark_tables import start as start_table, uses_spark_writer

    return start_table(writer, cfg) if uses_spark_writer(cfg) else writer.start()
