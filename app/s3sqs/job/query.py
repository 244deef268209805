"""The job's streaming query: started into the sink, watched until it stops (monitor.py), and started again
with the evolved schema when the source finds new columns (schemaEvolutionMode addNewColumns)."""
from __future__ import annotations

import argparse

from .monitor import QueryFailed

MAX_SCHEMA_RESTARTS = 20  # restarts for new columns in one run (addNewColumns); more means something is off


def run_query(spark, args: argparse.Namespace, job) -> int:
    """The query, restarted for new columns while the schema evolves; `job` is preflight.PreparedJob."""
    evolution = job.options.schema_evolution_mode or ("addNewColumns" if job.schema is None else "none")
    for restart in range(MAX_SCHEMA_RESTARTS + 1):
        try:
            return _run_once(spark, args, job)
        except QueryFailed as e:
            if evolution != "addNewColumns" or "NewColumnsFound" not in str(e) or restart == MAX_SCHEMA_RESTARTS:
                raise
            print(f"[job] {new_columns_line(str(e))}; restarting the query with the evolved schema", flush=True)
    raise AssertionError("not reached: the last attempt returns or raises")


def _run_once(spark, args: argparse.Namespace, job) -> int:
    """One streaming query, from start to drained (--until-drained) or failure."""
    from . import direct_write
    from .completion import CompletionCheck
    from .monitor import BatchMonitor

    reader = spark.readStream.format("s3-sqs").options(**job.spark_options)
    if job.schema is not None:  # the canonical DDL: Spark's reader takes no "name: type" form, which --schema may use
        reader = reader.schema(job.schema.ddl)
    df = reader.load()  # without a schema, Spark asks the source: stored under schemaLocation, or inferred now
    if job.schema is None:  # the sink checks its --partition-by against these columns
        print(f"[job] schema from {job.options.schema_location}: {df.schema.simpleString()}", flush=True)
    writer, rows_of, refusal = direct_write.query_writer(spark, job.spark_options, df, job.sink)
    if refusal:
        print(f"[job] Spark's file sink writes this output; the read tasks cannot: {refusal}", flush=True)
    writer = (writer.option("checkpointLocation", args.checkpoint).queryName(args.name)
              .trigger(processingTime=f"{args.trigger_interval_ms} milliseconds"))
    query = job.sink.start(writer)
    how = " (files written by the read tasks)" if rows_of is not None else ""
    print(f"[job] query {args.name} started: {args.queue_url} -> {job.sink.describe()}{how}", flush=True)
    monitor = BatchMonitor(CompletionCheck(job.options, args.checkpoint), args.queue_url, rows_of=rows_of)
    try:
        monitor.watch(query, args.until_drained, args.idle_checks)
    finally:
        query.stop()
    return 0


def new_columns_line(text: str) -> str:
    """The source's one line about new columns, out of Spark's error and its traceback."""
    line = next((ln for ln in text.splitlines() if "NewColumnsFound:" in ln), text.splitlines()[0] if text else "")
    return line[line.find("NewColumnsFound:"):].strip() if "NewColumnsFound:" in line else line.strip()
