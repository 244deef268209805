"""Executor side: read a partition's files and yield Arrow batches in exactly the declared schema.

Everything needed here travels inside the partition (the reader object in a task is a copy frozen at
query start), so this module depends only on pyarrow and its arguments. Small files are latency-bound
(one GET each), so a task reads several at once; pyarrow releases the GIL while it fetches and parses.

A big text file (or a byte range of one that the driver split off) is streamed in blocks of whole lines
(big.py): its rows go out block by block, so memory stays bounded whatever the file's size. Small files
are fetched whole, as before.

A file's fate: read; or missing (deleted after it was announced: recorded, like Spark's
ignoreMissingFiles); or bad (cannot be parsed, or not its declared format: every row malformed, as
wrong_format.py decides; quarantined by default, or the batch fails when `onBadFile` is `fail`); or
denied (HTTP 403: deleted, when the job role has no s3:ListBucket, or not readable by it; which one
cannot be told, so it is never retried nor taken for missing, and `onBadFile` decides as for a bad file,
without a copy that would be denied too). A transient fault is retried; one that outlasts the retries
fails the batch, which Spark retries: a good file is never set aside because the network was slow.

A streamed file's rows go out before its end is read (under PERMISSIVE with no rescued-data column, once
one of them parses: until then they are held back, so that a file that is not its format is set aside
with none out), so a file found bad part way keeps the rows already read, as Spark's ignoreCorruptFiles
keeps them, and its quarantine record says how many. A file split across tasks is still one file to the
quarantine: every piece writes the file's one record (same name), so a piece that fails records the file
once whatever its other pieces do; a piece that only has malformed rows to report does not replace a
record that sets the file aside (`write_record(keep=...)`). So when one piece of a file is bad and the
others are good, the good pieces' rows are ingested and the file is quarantined, its record naming the
bad piece's byte range.
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from ..core.errors import FileReadError
from ..core.files import Piece, S3File
from ..core.vocabulary import BadFileAction, FileStatus, SchemaEvolution
from .big import stream_rows
from .blocks import read_in_blocks
from .conform import META_COLUMNS, conform
from .file_schema import infer_file
from .filesystems import DENIED_REASON, WHOLE_FILE_BYTES, Filesystems, classify, fetch, with_retries
from .formats import FileRows, FormatOptions, MalformedFile, empty, reader_of
from .quarantine_writer import write_record
from .schema_proposals import stop_for_new_columns
from .spec import ReadSpec
from .wrong_format import may_set_aside, not_the_format

log = logging.getLogger("s3sqs.reader")

TARGET_BATCH_ROWS = 1 << 17
READ_THREADS = 8
BYTES_IN_FLIGHT = 512 << 20  # files held in memory at once by one task, at most (one file may exceed it)
# A streamed file's rows held back at most while none has parsed (wrong_format.py): as much as a file read
# whole may hold. A file with no row that parses by then is set aside on those rows.
HOLD_BYTES = 64 << 20


@dataclass
class _Outcome:
    file: S3File
    table: pa.Table | None = None
    rows: FileRows | None = None
    error: BaseException | None = None


def read_partition(items: list[S3File | Piece], spec: ReadSpec, schema: pa.Schema, batch_end: int):
    """Yield RecordBatches of `schema` for every readable file (or piece of one), few and large."""
    reader_of(spec.format.file_format)  # the format's module, imported once here, not first by eight threads
    pieces = [Piece.of(i) for i in items]
    streamed = [p for p in pieces if _streamed(p, spec)]
    files = [p.file for p in pieces if not _streamed(p, spec)]
    filesystems = Filesystems(spec.endpoint)
    budget = _ByteBudget(BYTES_IN_FLIGHT)
    fields = data_fields(schema, spec)

    def load(f: S3File) -> _Outcome:
        with budget.hold(f.size or 0):
            try:
                rows = with_retries(f.uri, lambda: _read_file(filesystems, f, spec, fields))
                # Set aside below as a bad file is, before its rows or new columns count.
                _judge(spec.format, rows.table.num_rows + rows.dropped, rows.malformed, rows.reason, rows.unknown)
                return _Outcome(f, conform(rows.table, schema, f, spec.partition_columns, spec.base_path), rows)
            except Exception as e:  # every failure names the file; nothing is dropped silently
                return _Outcome(f, error=e)

    tables, rows = [], 0
    # Files with columns the schema lacks, when the mode stops the stream for them: all of the task's are
    # found (and, with addNewColumns, proposed) before it stops, so that one restart takes them all.
    stopping = spec.evolution in (SchemaEvolution.ADD_NEW_COLUMNS, SchemaEvolution.FAIL_ON_NEW_COLUMNS)
    new_columns: list[tuple[S3File, tuple[str, ...]]] = []
    counts = {"files": 0, "rows": 0, FileStatus.QUARANTINED: 0, FileStatus.MISSING: 0, "malformed": 0}
    with ThreadPoolExecutor(max_workers=min(READ_THREADS, max(1, len(files)))) as pool:
        for o in pool.map(load, files):
            if o.error is not None:
                counts[_settle_failure(filesystems, o, spec, batch_end)] += 1
                continue
            if o.rows.unknown and stopping:
                new_columns.append((o.file, o.rows.unknown))
                continue
            if o.rows.malformed or o.rows.unknown:
                counts["malformed"] += o.rows.malformed
                status = FileStatus.MALFORMED_ROWS if o.rows.malformed else FileStatus.NEW_COLUMNS
                write_record(filesystems, spec.quarantine_location, batch_end, o.file, status,
                             malformed=o.rows.malformed, dropped=o.rows.dropped, reason=o.rows.reason,
                             new_columns=o.rows.unknown)
            counts["files"] += 1
            counts["rows"] += o.table.num_rows
            if o.table.num_rows >= TARGET_BATCH_ROWS // 4:  # big enough to go as it is, without a copy
                yield from _batches([o.table], schema)
                continue
            tables.append(o.table)
            rows += o.table.num_rows
            if rows >= TARGET_BATCH_ROWS:
                yield from _batches(tables, schema)
                tables, rows = [], 0
    for piece in streamed:
        yield from _stream_piece(filesystems, piece, spec, schema, fields, batch_end, counts, new_columns)
    if new_columns:
        stop_for_new_columns(filesystems, spec.schema_location, spec.evolution, new_columns,
                             lambda f, new: infer_file(filesystems, f, spec, spec.infer_column_types, new))
    if tables:
        yield from _batches(tables, schema)
    if counts["quarantined"] or counts["missing"] or counts["malformed"]:
        log.warning("s3-sqs read %d files (%d rows) of batch ending %d; %d quarantined, %d missing, "
                    "%d malformed rows", counts["files"], counts["rows"], batch_end, counts["quarantined"],
                    counts["missing"], counts["malformed"])


def _streamed(p: Piece, spec: ReadSpec) -> bool:
    fo = spec.format
    return not p.whole or read_in_blocks(fo.file_format, fo.options, p.file.path, p.file.size)


def _stream_piece(filesystems: Filesystems, piece: Piece, spec: ReadSpec, schema: pa.Schema,
                  fields: list[pa.Field], batch_end: int, counts: dict, new_columns: list):
    """Yield a big file's (or a piece's) rows block by block; settle its fate once it is read or fails."""
    f = piece.file
    reader = reader_of(spec.format.file_format)
    stopping = spec.evolution in (SchemaEvolution.ADD_NEW_COLUMNS, SchemaEvolution.FAIL_ON_NEW_COLUMNS)
    kept = malformed = dropped = read = 0
    unknown: tuple[str, ...] = ()
    reason = None
    # Rows held back while none has parsed, so that a file that is not its format is set aside before any of
    # them goes out (wrong_format.py); None once it is judged, or when the mode keeps such rows anyway.
    held: list[pa.Table] | None = [] if may_set_aside(spec.format) else None
    try:
        for rows in stream_rows(filesystems, piece, reader, fields, spec.format):
            read += rows.table.num_rows + rows.dropped
            malformed, dropped = malformed + rows.malformed, dropped + rows.dropped
            reason = reason or rows.reason
            unknown = tuple(dict.fromkeys(unknown + rows.unknown))
            stops = bool(rows.unknown) and stopping
            if held is not None and (malformed < read or stops or sum(t.nbytes for t in held) >= HOLD_BYTES):
                _judge(spec.format, read, malformed, reason, unknown, whole=False)
                kept += sum(t.num_rows for t in held)
                yield from _batches(held, schema) if held else ()
                held = None
            if stops:  # the stream stops for them: none of this file's rows are kept
                new_columns.append((f, rows.unknown))
                return
            table = conform(rows.table, schema, f, spec.partition_columns, spec.base_path, piece.block)
            if held is not None:
                held.append(table)
                continue
            kept += table.num_rows
            if table.num_rows:
                yield from _batches([table], schema)
        if held:  # the end, no row having parsed
            _judge(spec.format, read, malformed, reason, unknown)
            kept += sum(t.num_rows for t in held)
            yield from _batches(held, schema)
    except Exception as e:  # every failure names the file; nothing is dropped silently
        counts[_settle_failure(filesystems, _Outcome(f, error=e), spec, batch_end, piece, kept)] += 1
        counts["rows"] += kept
        return
    if malformed or unknown:
        counts["malformed"] += malformed
        status = FileStatus.MALFORMED_ROWS if malformed else FileStatus.NEW_COLUMNS
        write_record(filesystems, spec.quarantine_location, batch_end, f, status, malformed=malformed,
                     dropped=dropped, reason=_in_range(reason, piece), new_columns=unknown, keep=not piece.whole)
    counts["files"] += 1
    counts["rows"] += kept


def _judge(fo: FormatOptions, read: int, malformed: int, reason: str | None, unknown: tuple[str, ...],
           whole: bool = True) -> None:
    """Raise MalformedFile for rows that show the file is not its declared format (wrong_format.py)."""
    wrong = not_the_format(fo, read, malformed, reason, unknown, whole)
    if wrong:
        raise MalformedFile(wrong)


def _in_range(text: str | None, piece: Piece) -> str | None:
    """A piece's words name its byte range: a split file's record may come from any of its pieces."""
    if text is None or piece.whole:
        return text
    end = "the end" if piece.end is None else str(piece.end)
    return f"{text} (in bytes {piece.start} to {end} of the file, read by one task)"


def _settle_failure(filesystems: Filesystems, o: _Outcome, spec: ReadSpec, batch_end: int,
                    piece: Piece | None = None, kept: int = 0) -> str:
    """Record a file that could not be read, or raise when the batch must fail. Returns its status."""
    f, e = o.file, o.error
    kind = classify(e)
    detail = f"{type(e).__name__}: {e}"
    if piece is not None:
        detail = _in_range(detail, piece)
        if kept:
            detail += (f"; the {kept} rows read before it were kept (as Spark's ignoreCorruptFiles keeps them):"
                       " the file was streamed in blocks")
    if kind == "transient":
        raise FileReadError(f"s3-sqs could not read {f.uri}: {detail} (still failing after retries; the batch "
                            "fails and Spark runs it again)") from e
    if kind == "missing":
        log.warning("s3-sqs: %s is gone (deleted after it was announced?); recorded as missing", f.uri)
        write_record(filesystems, spec.quarantine_location, batch_end, f, FileStatus.MISSING, detail)
        return FileStatus.MISSING
    if kind == "denied":  # gone or not ours to read: set aside like a bad file, with no copy (it would be denied)
        detail = f"{DENIED_REASON} ({detail})"
        if spec.on_bad_file == BadFileAction.FAIL:
            raise FileReadError(
                f"s3-sqs could not read {f.uri}: {detail}. Check that the key exists and that the job role may read "
                "it (s3:GetObject, and s3:ListBucket for S3 to answer 404 for a missing key), or set the option "
                "onBadFile=quarantine to record such files and go on") from e
        write_record(filesystems, spec.quarantine_location, batch_end, f, FileStatus.QUARANTINED, detail, copy=False)
        log.error("s3-sqs quarantined %s without a copy: %s (record under %s/batches)", f.uri, detail,
                  spec.quarantine_location)
        return FileStatus.QUARANTINED
    if spec.on_bad_file == BadFileAction.FAIL:
        raise FileReadError(
            f"s3-sqs could not read {f.uri}: {detail}. Fix or delete the file, or set the option "
            "onBadFile=quarantine to set bad files aside and go on") from e
    write_record(filesystems, spec.quarantine_location, batch_end, f, FileStatus.QUARANTINED, detail)
    log.error("s3-sqs quarantined %s: %s (record and copy under %s/batches)", f.uri, detail,
              spec.quarantine_location)
    return FileStatus.QUARANTINED


def _batches(tables, schema):
    """Few, large batches: small files' rows are combined (a cheap copy), a big file's chunks go as they are."""
    combined = pa.concat_tables(tables)
    if len(tables) > 1:
        combined = combined.combine_chunks()
    for b in combined.to_batches(max_chunksize=TARGET_BATCH_ROWS):
        yield b.cast(schema) if b.schema != schema else b


def data_fields(schema: pa.Schema, spec: ReadSpec) -> list[pa.Field]:
    """The declared columns a file itself holds: not partition values, file metadata or rescued data."""
    skip = set(spec.partition_columns) | set(META_COLUMNS) | {spec.format.rescued_column}
    return [f for f in schema if f.name not in skip]


def _read_file(filesystems: Filesystems, f: S3File, spec: ReadSpec, fields: list[pa.Field]) -> FileRows:
    fs = filesystems.of(f)
    reader = reader_of(spec.format.file_format)
    if reader.RANDOM_ACCESS and (f.size is None or f.size > WHOLE_FILE_BYTES):
        with fs.open_input_file(f.path) as fh:  # random access: only the declared columns are fetched
            return reader.read(fh, fields, spec.format, f)
    data = fetch(fs, f, reader.COMPRESSION)
    if data.size == 0:  # an empty object is an empty file, not an error
        return empty(fields)
    return reader.read(pa.BufferReader(data) if reader.RANDOM_ACCESS else data, fields, spec.format, f)


class _ByteBudget:
    """Bounds the bytes of files held in memory at once; a file larger than the budget goes alone."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0
        self._cond = threading.Condition()

    def hold(self, n: int):
        budget = self

        class _Held:
            def __enter__(self):
                with budget._cond:
                    budget._cond.wait_for(lambda: budget.used == 0 or budget.used + n <= budget.limit)
                    budget.used += n

            def __exit__(self, *exc):
                with budget._cond:
                    budget.used -= n
                    budget._cond.notify_all()
        return _Held()
