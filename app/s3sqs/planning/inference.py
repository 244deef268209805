"""The stream's schema when none is given: kept under `schemaLocation`, inferred once from the first files.

Spark asks a Python source for its schema before the query starts, so the sample comes from the source's
own state: files already recorded and not yet in the sink, or else the first files announced on the queue,
received and recorded exactly as the running stream does it (numbered in arrival order, durable before
their messages are deleted). Nothing is lost or re-ordered: the stream then plans those same files.

On every later start the newest stored version is the schema; proposals left by a stream that met new
columns (schemaEvolutionMode addNewColumns) are merged into a new version first.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

from ..config.source_options import SourceOptions
from ..core import aws
from ..core.errors import UsageError
from ..core.files import S3File
from ..reading.filesystems import Filesystems
from ..reading.file_schema import infer_file
from ..reading.schema_proposals import decode_schema
from ..state.schemas import SchemaLog, SchemaVersion
from ..state.store import open_store
from . import schemas
from .ledger import Ledger

log = logging.getLogger("s3sqs")
INFER_THREADS = 8


def stream_schema(o: SourceOptions, read_spec) -> SchemaVersion:
    """The newest stored schema, evolved by pending proposals; inferred and stored first if there is none."""
    if not o.schema_location:
        raise UsageError("the s3-sqs source needs a schema: give one with .schema('id LONG, ...'), or set the "
                         "option schemaLocation (e.g. 's3://my-checkpoints/my-query/_schemas') for the source to "
                         "infer it from the first files and keep it there (the job sets it under --checkpoint)")
    history = SchemaLog(open_store(o.schema_location, aws.lazy_client("s3", o.endpoint)))
    latest = history.latest()
    if latest is None:
        schema, parts, cause = infer(o, read_spec)
        latest = history.write(schema, parts, cause)
        log.info("s3-sqs: schema v0 stored under %s (%s)", o.schema_location, cause)
    proposals = history.proposals()
    if proposals:
        additions = [_spark_json(decode_schema(p["schema"])) for _, p in proposals]
        evolved = schemas.evolve(latest.schema, additions)
        if evolved != latest.schema:
            files = sorted({p["file"] for _, p in proposals})
            cols = sorted({c for _, p in proposals for c in p.get("new_columns", ())})
            latest = history.write(evolved, latest.partition_columns,
                                   f"new columns {', '.join(cols)} in {', '.join(files[:3])}")
            log.warning("s3-sqs: schema v%d adds %s (from %s)", latest.number, ", ".join(cols), files[0])
        history.drop([name for name, _ in proposals])
    return latest


def infer(o: SourceOptions, read_spec) -> tuple[dict, tuple[str, ...], str]:
    """(schema, partition columns, cause) from a sample of the stream's first files."""
    files = sample(o)
    if not files:
        raise UsageError(
            f"no file was announced on {o.queue_url} within schemaInferenceWait ({o.schema_inference_wait_seconds:g} s) "
            "to infer the schema from; upload a file first, raise schemaInferenceWait, or give the schema")
    spec = read_spec(o, [])
    filesystems = Filesystems(o.endpoint)

    def one(f: S3File):
        try:
            return infer_file(filesystems, f, spec, o.infer_column_types)
        except Exception as e:  # the stream quarantines it when it reads it; inference goes on without it
            log.warning("s3-sqs: cannot infer a schema from %s (%s: %s); left out of the sample", f.uri,
                        type(e).__name__, e)
            return None
    with ThreadPoolExecutor(INFER_THREADS) as pool:
        found = [s for s in pool.map(one, files) if s is not None]
    if not found:
        raise UsageError(f"none of the {len(files)} sampled files could be read as {o.file_format} to infer a schema "
                         f"(first: {files[0].uri}); check fileFormat and the format's options")
    merged = {"type": "struct", "fields": []}
    for s in found:
        merged = schemas.merge_structs(merged, _spark_json(s), widen=True)
    merged = schemas.no_void(merged)
    parts = list(o.partition_columns) or schemas.partition_columns([f.key for f in files], o.base_path)
    merged = schemas.with_columns(merged, parts)
    if o.schema_hints:
        from ..config.ddl import parse_schema
        merged = schemas.with_hints(merged, parse_schema(o.schema_hints, "schemaHints").spark_json())
    merged = schemas.with_columns(merged, [o.rescued_data_column])
    return merged, tuple(parts), f"inferred from {len(found)} files, first {files[0].uri}"


def sample(o: SourceOptions) -> list[S3File]:
    """The first files of the stream not yet in the sink, within the sampling limits; receives from the
    queue (or lists basePath, with includeExistingFiles) when the state holds none."""
    ledger = Ledger(o)
    try:
        files = _pending(ledger, o)
        if not files and not o.reprocessing:
            from .backfill import Backfill
            from .intake import Intake
            from .queue import QueueClient, sqs_client
            queue = QueueClient(sqs_client(o.endpoint, o.max_concurrency), o.queue_url, o.visibility_timeout_seconds,
                                o.max_concurrency, parallel_deletes=o.endpoint_url is None)
            intake = Intake(o, ledger, queue)
            try:
                backfill = Backfill(o, ledger, intake.stopping)
                if backfill.due():
                    backfill.run()
                deadline = time.monotonic() + o.schema_inference_wait_seconds
                while not (files := _pending(ledger, o)) and time.monotonic() < deadline:
                    wait = int(max(1, min(o.long_poll_wait_seconds, deadline - time.monotonic())))
                    intake.ingest(queue.receive_round(4, wait))
            finally:
                intake.stop()  # waits for the deletes of recorded files' messages
        return files
    finally:
        ledger.close()


def _pending(ledger: Ledger, o: SourceOptions) -> list[S3File]:
    idx = ledger.index
    out, size = [], 0
    for f in idx.iter_records(idx.committed_seq + 1):
        if len(out) >= o.schema_inference_max_files or (out and size + (f.size or 0) > o.schema_inference_max_bytes):
            break
        out.append(f)
        size += f.size or 0
    return out


def _spark_json(schema) -> dict:
    from pyspark.sql.pandas.types import from_arrow_schema
    return from_arrow_schema(schema).jsonValue()
