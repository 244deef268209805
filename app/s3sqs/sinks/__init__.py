"""Sinks of the job, in the job's process (and, for the table files, its executors): Parquet files with
Spark's file sink log, or a Delta or Iceberg table, committed exactly once per micro-batch, after the
user's optional transform.

- `kinds`: one class per sink kind (`Sink`: settings from the job's flags, where it writes, the Spark
  settings it needs, the table it opens, its writer), in a registry of `SinkKind`s;
- `stream`: the per-batch protocol of the tables (`TableSink`), and the direct writes' table (`DirectTable`);
- `spark_tables`: what Spark's own Delta and Iceberg writers share (`--table-writer spark`);
- `target`: what a table format implements (`TableTarget`), done by `delta`, `iceberg` and
  `file_sink_log` (the parquet sink's `_spark_metadata` log, when the read tasks write its files);
- `table_files`: executor side, a batch's rows as Parquet data files; `transform`: the user's function;
- pure helpers: `table_schema` (Arrow types), `paths` (folders, names), `stats` (Delta statistics),
  `compaction` (which files to combine); `location`: where files live, for pyarrow, delta-rs and pyiceberg.

The job calls `kinds.from_flags(args)` before Spark starts, then the sink's `session_conf()`, `writer(df)`
(or `direct_table(schema)` for a direct write) and `start(writer)`.
"""
from __future__ import annotations

from .target import SinkError

# `kinds` is imported where the job asks for its sink, not here: executors and Spark's Python planners import
# this package for the table files only, and the sinks' settings import pydantic (0.15-0.25 s in each).
__all__ = ["SinkError"]
