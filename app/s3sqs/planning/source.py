"""The thin Spark adapter: format "s3-sqs" on the Python DataSource API of Spark 4.0 and 4.2+.

Spark runs it in several processes: the streaming runner keeps one reader for the whole run and calls its
offset methods (they go to the Controller, opened lazily there); tasks get a pickled copy whose `read`
hands its partition's files to s3sqs.reading. Spark 4.2+ passes `start` and a ReadLimit to latestOffset
and supports Trigger.AvailableNow; 4.0 calls latestOffset() bare, so the source enforces its own limits
there (batch_limits.batch_limit).
"""
from __future__ import annotations

import logging
import os
import signal
import threading
import time

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from ..config.format_options import unreadable_column
from ..config.source_options import SourceOptions
from ..core.errors import UsageError
from ..core.files import Piece, S3File
from ..core.vocabulary import SchemaEvolution
from ..reading.blocks import splittable
from ..reading.conform import METADATA, metadata_column
from ..reading.formats import FormatOptions, reader_of
from ..reading.spec import ReadSpec
from . import batch_limits, partitions, slots

try:  # Spark 4.2+
    from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadMaxBytes, ReadMaxFiles,
                                                  SupportsTriggerAvailableNow)
    READER_MIXINS: tuple = (SupportsTriggerAvailableNow,)
except ImportError:  # Spark 4.0: no read limits, no AvailableNow for Python sources
    ReadAllAvailable = ReadMaxBytes = ReadMaxFiles = None
    READER_MIXINS = ()

FORMAT_NAME = "s3-sqs"
log = logging.getLogger("s3sqs")


class S3SqsDataSource(DataSource):
    """Streams the S3 files announced on an SQS queue, each exactly once. docs/source.md has its options."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def __init__(self, options):
        super().__init__(options)
        from ..config.options import parse_options  # the validator stays where the query is defined
        self.source_options = parse_options(dict(options))  # fails here, before any AWS call

    def schema(self):
        """Spark asks only when no schema was given: the one stored under schemaLocation (inferred once)."""
        from .inference import stream_schema
        return StructType.fromJson(stream_schema(self.source_options, read_spec).schema)

    def streamReader(self, schema: StructType) -> "S3SqsStreamReader":
        o = self.source_options
        stored = _stored_schema(o)
        inferred = stored is not None and StructType.fromJson(stored.schema) == schema
        parts = o.partition_columns or (stored.partition_columns if inferred else ())
        evolution = o.schema_evolution_mode or (SchemaEvolution.ADD_NEW_COLUMNS if inferred else SchemaEvolution.NONE)
        check_schema(o, schema, parts, evolution, inferred)
        return S3SqsStreamReader(o, schema, parts, evolution)


class S3SqsPartition(InputPartition):
    def __init__(self, files: list[S3File | Piece], batch_end: int):
        super().__init__(None)
        self.files = files  # whole files, and pieces (byte ranges) of big splittable ones
        self.batch_end = batch_end  # names where the batch's file problems are recorded


class S3SqsStreamReader(DataSourceStreamReader, *READER_MIXINS):
    def __init__(self, opts: SourceOptions, schema: StructType, partition_columns: tuple[str, ...] = (),
                 evolution: str = SchemaEvolution.NONE):
        self.opts = opts
        self.schema = schema
        self.arrow_schema = arrow_schema(schema)
        # What tasks need; made here, once.
        self.spec = read_spec(opts, self.arrow_schema.names, evolution, partition_columns or opts.partition_columns)
        self._driver = None  # opened lazily: __init__ also runs in processes that only read

    @property
    def driver(self):
        if self._driver is None:
            from .controller import Controller  # not in read tasks: they need none of the driver's clients
            _log_to_stderr()
            self._driver = Controller(self.opts)
        return self._driver

    def __getstate__(self):  # tasks get a copy of this object: what reading needs, never the open state
        return {"spec": self.spec, "arrow_schema": self.arrow_schema, "_driver": None}

    # -- offsets --
    def initialOffset(self) -> dict:
        return {"seq": self.driver.initial_offset()}

    def getDefaultReadLimit(self):
        o = self.opts
        if o.max_files_per_trigger is not None:
            return ReadMaxFiles(o.max_files_per_trigger)
        if o.max_bytes_per_trigger is not None:
            return ReadMaxBytes(o.max_bytes_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        _on_sigterm(self.driver)
        seq = None if start is None else int(start["seq"])
        o = self.opts
        engine, value = _engine_limit(limit)
        return {"seq": self.driver.latest_offset(
            seq, batch_limits.batch_limit(o.max_files_per_trigger, o.max_bytes_per_trigger, engine, value))}

    def reportLatestOffset(self) -> dict | None:
        """The newest file recorded, which Spark 4.2+ shows as this source's latestOffset in the query progress:
        beside endOffset, the files recorded and not planned yet. The only figure Spark takes from a Python
        source; it has no way for one to report metrics (the job logs them, see s3sqs.metrics). Spark 4.0 never
        calls it."""
        index = self._driver.index if self._driver is not None else None
        return None if index is None else {"seq": index.last_seq}

    def prepareForTriggerAvailableNow(self) -> None:
        self.driver.prepare_available_now()

    def partitions(self, start: dict, end: dict) -> list[S3SqsPartition]:
        files = self.driver.files_between(int(start["seq"]), int(end["seq"]))
        fo = self.spec.format
        live = live_cores(self.opts.executor_cores_file) if files else None
        least = slots.batch_slots(live, self.opts.min_partitions, os.cpu_count() or 2, time.time())
        items = partitions.split_files(files, lambda f: splittable(fo.file_format, fo.options, f.path),
                                    partitions.split_bytes(files, self.opts.max_partition_bytes, least))
        groups = partitions.pack(items, partitions.item_size, self.opts.max_partition_bytes, least)
        if files:
            log.info("s3-sqs batch (%s, %s]: %d files (%d pieces) in %d partitions (at least %d: %s)", start["seq"],
                     end["seq"], len(files), len(items), len(groups), least,
                     f"{live.cores} executor cores" if live else "no live executor figure")
        return [S3SqsPartition(g, int(end["seq"])) for g in groups]

    def commit(self, end: dict) -> None:
        # Spark calls this one batch late, if at all; the start of latestOffset is the real signal.
        self.driver.commit(int(end["seq"]))

    def read(self, partition: S3SqsPartition):
        from ..reading.reader import read_partition  # tasks only: the planning processes never read
        yield from read_partition(partition.files, self.spec, self.arrow_schema, partition.batch_end)


def live_cores(path: str | None) -> slots.LiveCores | None:
    """The live executor cores the job keeps in `path` (option executorCoresFile), if it has written them."""
    if path is None:
        return None
    try:
        with open(path) as f:
            return slots.decode(f.read())
    except FileNotFoundError:
        return None  # the job writes it once its first executor is up
    except (OSError, ValueError) as e:
        log.warning("s3-sqs: option executorCoresFile: %s; sizing this batch without it", e)
        return None


def arrow_schema(schema: StructType):
    """The Arrow schema Spark checks a Python source's batches against."""
    from pyspark.sql.pandas.types import to_arrow_schema
    try:
        return to_arrow_schema(schema, timezone="UTC")
    except TypeError:  # Spark 4.0 has no timezone keyword; it uses UTC
        return to_arrow_schema(schema)


def read_spec(o: SourceOptions, columns: list[str], evolution: str = SchemaEvolution.NONE,
              partition_columns: tuple[str, ...] | None = None) -> ReadSpec:
    rescued = o.rescued_data_column if o.rescued_data_column in columns else None
    parts = o.partition_columns if partition_columns is None else tuple(partition_columns)
    return ReadSpec(FormatOptions(o.file_format, o.reader_options, o.mode, rescued), o.endpoint,
                    parts, o.base_path, o.quarantine_location, o.on_bad_file, evolution, o.schema_location or "",
                    o.infer_column_types)


def check_schema(o: SourceOptions, schema: StructType, parts: tuple[str, ...], evolution: str,
                 inferred: bool) -> None:
    """The schema and the schema options agree; each message names what to change."""
    names = schema.fieldNames()
    missing = [c for c in parts if c not in names]
    if missing:
        raise UsageError(f"option 'partitionColumns' names {missing}, which the schema does not have; "
                         "declare partition columns in the schema too")
    if evolution == SchemaEvolution.ADD_NEW_COLUMNS and not inferred:
        raise UsageError("schemaEvolutionMode addNewColumns evolves the schema the source infers and keeps under "
                         "schemaLocation; with a schema given by .schema(...) use rescue, failOnNewColumns or none "
                         "(or drop .schema(...) and fix types with schemaHints)")
    # `_metadata` is filled by the source, never read from a file: a STRUCT of it is fine whatever the format.
    problem = unreadable_column(o.file_format, [(f.name, f.dataType.simpleString()) for f in schema.fields
                                                if f.name != METADATA])
    if problem:
        raise UsageError(problem)
    if METADATA in names:  # an unknown field fails now, not in every task
        metadata_column(arrow_schema(schema).field(METADATA).type, S3File("", ""), 0)
    if evolution == SchemaEvolution.RESCUE and o.rescued_data_column not in names:
        raise UsageError(f"schemaEvolutionMode rescue keeps what does not fit in the column "
                         f"{o.rescued_data_column!r}: declare it in the schema ({o.rescued_data_column} STRING)")


def _stored_schema(o: SourceOptions):
    if not o.schema_location:
        return None
    from ..core import aws
    from ..state.schemas import SchemaLog
    from ..state.store import open_store
    return SchemaLog(open_store(o.schema_location, aws.lazy_client("s3", o.endpoint))).latest()


def _engine_limit(limit) -> tuple[str | None, int | None]:
    """Spark 4.2+'s ReadLimit as (kind, value) for batch_limits; Spark 4.0 passes none."""
    if limit is None:
        return None, None
    if ReadMaxFiles is not None and isinstance(limit, ReadMaxFiles):
        return "files", limit.max_files
    if ReadMaxBytes is not None and isinstance(limit, ReadMaxBytes):
        return "bytes", limit.max_bytes
    if ReadAllAvailable is not None and isinstance(limit, ReadAllAvailable):
        return "all", None
    raise ValueError(f"s3-sqs does not support the read limit {type(limit).__name__}")


def _log_to_stderr() -> None:
    """Spark's Python workers configure no logging; send ours to stderr, which lands in the driver log."""
    if not log.handlers:
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(h)
        log.setLevel(logging.DEBUG if os.environ.get("S3SQS_DEBUG") else logging.INFO)


def register(spark) -> None:
    spark.dataSource.register(S3SqsDataSource)


_sigterm_handled = False


def _on_sigterm(driver) -> None:
    """In the process that plans (Spark's source runner), let SIGTERM (how Spark stops it) first hand the
    source's unrecorded messages back to the queue (Controller.terminate), then end it as before."""
    global _sigterm_handled
    if _sigterm_handled or threading.current_thread() is not threading.main_thread():
        return
    _sigterm_handled = True

    def handler(signum, frame):
        # In a thread, and waited for only so long: the signal may have come while this thread held a lock
        # the hand-back needs (logging's, say), and the process must end whatever happens.
        helper = threading.Thread(target=driver.terminate, name="s3sqs-terminate", daemon=True)
        helper.start()
        helper.join(driver.opts.long_poll_wait_seconds + 10)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
    signal.signal(signal.SIGTERM, handler)


def warm_format(file_format: str) -> None:
    """Import what reading this format takes (its reader's optional `warm()`), in a task of the job's
    warm-up, so that the stream's first files find it loaded."""
    warm = getattr(reader_of(file_format), "warm", None)
    if warm is not None:
        warm()
