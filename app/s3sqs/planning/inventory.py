"""Backfill from an S3 Inventory report instead of a listing: the report's manifest names its data files
(CSV gzipped, ORC or Parquet), whose rows are the bucket's objects. Their keys go through the same index
as announced files (a key both inventoried and announced lands once), filtered as listed files are (basePath's
bucket and prefix, pathGlobFilter, maxFileAge), in chunks, each recorded durably with how far the report is
read, so that a run killed midway resumes at its last chunk. A report is read once; a newer one (another
manifest) is read when it is named.

The layout is AWS's (docs: "Configuring Amazon S3 Inventory"): manifest.json with sourceBucket, fileFormat,
fileSchema and files[{key, size}], in the destination bucket named by destinationBucket. CSV keys are
URL-encoded; ORC and Parquet keys are not.
"""
from __future__ import annotations

import gzip
import json
import logging
import os
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterator
from urllib.parse import unquote_plus, urlparse

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from ..core.counters import Stat
from ..core.errors import UsageError
from ..core.files import INVENTORIED, S3File
from . import fates
from .ledger import Ledger

log = logging.getLogger("s3sqs")
CHUNK_ROWS = 50_000        # rows recorded (and made durable) at a time
PROGRESS_EVERY = 200_000   # rows between two progress lines
FORMATS = ("CSV", "ORC", "Parquet")
# The report's columns by a spelling-free name: CSV's fileSchema says "LastModifiedDate", ORC and Parquet
# name it last_modified_date.
WANTED = {"bucket": "bucket", "key": "key", "size": "size", "lastmodifieddate": "modified", "etag": "etag",
          "versionid": "version_id", "islatest": "is_latest", "isdeletemarker": "is_delete_marker"}


class InventoryError(UsageError):
    """The report cannot be read as an S3 Inventory report; the message says what is wrong with it."""


@dataclass(frozen=True)
class Manifest:
    uri: str
    source_bucket: str
    file_format: str
    columns: tuple[str, ...]                  # CSV: the columns, in order; ORC/Parquet: read from the files
    files: tuple[tuple[str, str, int], ...]   # (bucket, key, size) of each data file


def parse_manifest(text: str, uri: str) -> Manifest:
    """The manifest's parts this backfill needs, or InventoryError naming what is missing."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise InventoryError(f"backfillFromInventory: {uri} is not JSON ({e}); name the report's manifest.json") from None
    if not isinstance(doc, dict):
        raise InventoryError(f"backfillFromInventory: {uri} is not an S3 Inventory manifest (not an object)")
    missing = [k for k in ("sourceBucket", "fileFormat", "files") if k not in doc]
    if missing:
        raise InventoryError(f"backfillFromInventory: {uri} lacks {', '.join(missing)}: is it an S3 Inventory "
                             "manifest.json?")
    fmt = next((f for f in FORMATS if f.lower() == str(doc["fileFormat"]).lower()), None)
    if fmt is None:
        raise InventoryError(f"backfillFromInventory: {uri} has fileFormat {doc['fileFormat']!r}; "
                             f"S3 Inventory writes one of {', '.join(FORMATS)}")
    columns: tuple[str, ...] = ()
    if fmt == "CSV":
        columns = tuple(c.strip() for c in str(doc.get("fileSchema", "")).split(","))
        if not {"bucket", "key"} <= {_plain(c) for c in columns}:
            raise InventoryError(f"backfillFromInventory: {uri}: fileSchema {doc.get('fileSchema')!r} has no "
                                 "Bucket and Key columns")
    dest = str(doc.get("destinationBucket", "")).rsplit(":", 1)[-1] or urlparse(uri).netloc
    files = tuple((dest, str(f["key"]), int(f.get("size", 0))) for f in doc["files"])
    return Manifest(uri, str(doc["sourceBucket"]), fmt, columns, files)


def _plain(name: str) -> str:
    return name.lower().replace("_", "").replace(" ", "")


def files_of(table: pa.Table, fmt: str, bucket: str, prefix: str) -> list[S3File]:
    """The report rows' objects under `prefix` of `bucket`, latest versions only, as file records."""
    cols = {WANTED[_plain(n)]: table.column(n) for n in table.column_names if _plain(n) in WANTED}
    if "key" not in cols:
        raise InventoryError(f"the inventory's {fmt} files have no key column (columns: {table.column_names})")
    keep = pc.invert(pc.ends_with(cols["key"], "/"))
    if "bucket" in cols:
        keep = pc.and_(keep, pc.equal(cols["bucket"], bucket))
    for flag, wanted in (("is_latest", True), ("is_delete_marker", False)):
        if flag in cols:  # versioned reports: the current version of each key, never a delete marker
            keep = pc.and_(keep, pc.equal(_booleans(cols[flag]), wanted))
    table = pa.table(cols).filter(pc.fill_null(keep, False))
    keys = table.column("key").to_pylist()
    if fmt == "CSV":
        keys = [unquote_plus(k) for k in keys]
    sizes = _column(table, "size", pa.int64())
    etags = _column(table, "etag", pa.string())
    versions = _column(table, "version_id", pa.string())
    modified = _modified_ms(table)
    out = []
    for i, key in enumerate(keys):
        if key.startswith(prefix):
            out.append(S3File(bucket, key, size=sizes[i], etag=(etags[i] or "").strip('"') or None,
                              version_id=versions[i] or None, event_ms=modified[i], event_name=INVENTORIED))
    return out


def _booleans(col) -> pa.ChunkedArray:
    return col if pa.types.is_boolean(col.type) else pc.equal(pc.utf8_lower(col), "true")


def _column(table: pa.Table, name: str, typ: pa.DataType) -> list:
    if name not in table.column_names:
        return [None] * table.num_rows
    col = table.column(name)
    return (col if col.type == typ else pc.cast(col, typ, safe=False)).to_pylist()


def _modified_ms(table: pa.Table) -> list:
    if "modified" not in table.column_names:
        return [None] * table.num_rows
    col = table.column("modified")
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        col = pc.strptime(pc.utf8_slice_codeunits(col, 0, 19), "%Y-%m-%dT%H:%M:%S", "ms")
    return pc.cast(pc.cast(col, pa.timestamp("ms")), pa.int64()).to_pylist()


def chunks(path: str, fmt: str, columns: tuple[str, ...], skip_rows: int) -> Iterator[pa.Table]:
    """The data file's rows in tables of CHUNK_ROWS or fewer, after the first `skip_rows` (resuming).
    CSV streams through gzip; ORC and Parquet are read a stripe or row group at a time."""
    if fmt == "CSV":
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as raw:
            reader = pacsv.open_csv(raw, read_options=pacsv.ReadOptions(column_names=list(columns),
                                                                        block_size=8 << 20),
                                    convert_options=pacsv.ConvertOptions(
                                        column_types={c: pa.string() for c in columns}, strings_can_be_null=True))
            yield from _rechunk((pa.Table.from_batches([b]) for b in reader), skip_rows)
    elif fmt == "Parquet":
        import pyarrow.parquet as pq
        yield from _rechunk((pa.Table.from_batches([b]) for b in pq.ParquetFile(path).iter_batches(CHUNK_ROWS)),
                            skip_rows)
    else:
        import pyarrow.orc as orc
        f = orc.ORCFile(path)
        yield from _rechunk((f.read_stripe(i) for i in range(f.nstripes)), skip_rows, batches=True)


def _rechunk(tables, skip: int, batches: bool = False) -> Iterator[pa.Table]:
    for t in tables:
        if batches:
            t = pa.Table.from_batches([t])
        if skip >= t.num_rows:
            skip -= t.num_rows
            continue
        t, skip = t.slice(skip), 0
        for start in range(0, t.num_rows, CHUNK_ROWS):
            yield t.slice(start, CHUNK_ROWS)


class InventoryBackfill:
    """Reads one report into the index, resuming where a killed run stopped (the ledger's meta says where)."""

    def __init__(self, manifest_uri: str, base_path: str | None, ledger: Ledger, opts, stopping):
        self.uri, self.ledger, self.opts, self.stopping = manifest_uri, ledger, opts, stopping
        u = urlparse(base_path or "")
        self.bucket_filter, self.prefix = (u.netloc or None), u.path.lstrip("/")

    @property
    def done_key(self) -> str:
        return f"inventory_done:{self.uri}"

    @property
    def progress_key(self) -> str:
        return f"inventory_progress:{self.uri}"

    def pending(self) -> bool:
        return self.ledger.index.meta(self.done_key) is None

    def run(self, chunk_done=lambda: None) -> None:
        manifest = parse_manifest(self._get_text(self.uri), self.uri)
        bucket = self.bucket_filter or manifest.source_bucket
        if bucket != manifest.source_bucket:
            raise InventoryError(f"backfillFromInventory: {self.uri} is a report of bucket {manifest.source_bucket}, "
                                 f"but basePath is in {bucket}; name the report of {bucket}")
        progress = json.loads(self.ledger.index.meta(self.progress_key) or b'{"file": 0, "rows": 0}')
        t0, rows, new = time.monotonic(), 0, 0
        log.info("s3-sqs: backfill from the inventory report %s: %d %s files%s", self.uri, len(manifest.files),
                 manifest.file_format, f", resuming at file {progress['file'] + 1}" if progress["file"] else "")
        for n, (dest, key, size) in enumerate(manifest.files):
            if n < progress["file"]:
                continue
            done_rows = progress["rows"] if n == progress["file"] else 0
            with self._local_copy(dest, key) as path:
                for table in chunks(path, manifest.file_format, manifest.columns, done_rows):
                    if self.stopping.is_set():
                        return
                    done_rows += table.num_rows
                    new += self._record(files_of(table, manifest.file_format, bucket, self.prefix), table.num_rows,
                                        {"file": n, "rows": done_rows})
                    rows += table.num_rows
                    chunk_done()
                    if rows % PROGRESS_EVERY < CHUNK_ROWS:
                        log.info("s3-sqs: inventory %s: file %d of %d, %d rows so far, %d new (%.0f rows/s)",
                                 self.uri, n + 1, len(manifest.files), rows, new, rows / max(1e-3, time.monotonic() - t0))
            self._record([], 0, {"file": n + 1, "rows": 0})
        with self.ledger.lock:
            self.ledger.index.set_meta(self.done_key, str(int(time.time() * 1000)).encode())
            self.ledger.persist()
        log.info("s3-sqs: inventory %s read: %d rows, %d new files, in %.1f s", self.uri, rows, new,
                 time.monotonic() - t0)

    def _record(self, files: list[S3File], rows: int, progress: dict) -> int:
        o, ledger = self.opts, self.ledger
        with ledger.lock:
            decisions = fates.decide(files, ledger.index.seq_of, datetime.now(timezone.utc),
                                       o.max_file_age_seconds, o.path_glob_filter, o.allow_overwrites)
            fresh = [(d.dedup_key, d.file) for d in decisions if d.outcome == fates.NEW]
            ledger.record(fresh, {Stat.LISTED: rows, Stat.LISTED_NEW: len(fresh)},
                          {self.progress_key: json.dumps(progress).encode()})
        return len(fresh)

    def _get_text(self, uri: str) -> str:
        u = urlparse(uri)
        try:
            body = self.ledger.s3().get_object(Bucket=u.netloc, Key=u.path.lstrip("/"))["Body"].read()
        except Exception as e:
            raise InventoryError(f"backfillFromInventory: cannot read {uri} ({type(e).__name__}: {e}); check the "
                                 "location and that the job's role may read the inventory's bucket") from None
        return body.decode("utf-8")

    @contextmanager
    def _local_copy(self, bucket: str, key: str):
        """The data file in a temporary local file (ORC and Parquet need random access; CSV streams from it)."""
        fd, path = tempfile.mkstemp(suffix="-" + os.path.basename(key))
        os.close(fd)
        try:
            self.ledger.s3().download_file(bucket, key, path)
            yield path
        finally:
            os.remove(path)
