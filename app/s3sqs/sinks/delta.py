"""Delta Lake tables through delta-rs: create or check the table, commit a batch's files exactly once,
and compact small files.

Exactly once: each commit carries a Delta application transaction (`txn` action) with the streaming
query's id as appId and the micro-batch id as version, in the same atomic log entry as the files. A
batch whose id is not above the table's recorded version for this query is already in the table (Spark
replays the last batch after a crash that came after the table commit), so it is skipped.
"""
from __future__ import annotations

import json
import logging
import time

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Schema, Transaction, write_deltalake
from deltalake.exceptions import TableNotFoundError
from deltalake.transaction import AddAction

from .compaction import FileSizes, TableFile, plan_compaction
from .location import Location
from .table_schema import added_fields
from .target import SinkError, WrittenFile

log = logging.getLogger("s3sqs.sinks")


class DeltaTarget:
    def __init__(self, table: Location, partition_by: tuple[str, ...] = ()):
        self.location = table
        self.partition_by = tuple(partition_by)
        self._table: DeltaTable | None = None

    @classmethod
    def existing(cls, table: Location) -> "DeltaTarget":
        """An existing table, with the partitioning it was created with."""
        target = cls(table)
        target.partition_by = tuple(target.table().metadata().partition_columns)
        return target

    # --- table ---
    def open(self) -> DeltaTable | None:
        try:
            return DeltaTable(self.location.uri, storage_options=self.location.delta_storage_options())
        except TableNotFoundError:
            return None

    def table(self) -> DeltaTable:
        if self._table is None:
            self._table = self.open()
            if self._table is None:
                raise SinkError(f"no Delta table at {self.location.uri}")
        else:
            self._table.update_incremental()
        return self._table

    def ensure(self, schema: pa.Schema) -> None:
        """Create the table, or check that the existing one has this schema and partitioning."""
        dt = self.open()
        if dt is None:
            DeltaTable.create(self.location.uri, schema, partition_by=list(self.partition_by) or None, mode="error",
                              storage_options=self.location.delta_storage_options())
            log.info("created Delta table %s (partitioned by %s)", self.location.uri, list(self.partition_by))
            return
        have = tuple(dt.metadata().partition_columns)
        if have != self.partition_by:
            raise SinkError(f"Delta table {self.location.uri} is partitioned by {list(have)}, but --partition-by "
                            f"is {list(self.partition_by)}; use the table's partitioning or another --table")
        added = added_fields(pa.schema(dt.schema().to_arrow()), schema)
        if added:
            self._merge_schema(schema, added)
            dt = self.table()
        check_columns(self.location.uri, dt.schema().to_json(), Schema.from_arrow(schema).to_json())

    def _merge_schema(self, schema: pa.Schema, added: list[str]) -> None:
        """The stream's schema gained fields (schema evolution): the table gains them, nullable, in a commit of
        their own (an empty append with schema merge) before the first batch that holds them; older rows
        read them as null. delta-rs commits a batch's files only with the table's current schema, so the
        two cannot share a commit; a kill between them leaves the new, empty fields, which the next start
        finds in place."""
        write_deltalake(self.location.uri, schema.empty_table(), mode="append", schema_mode="merge",
                        partition_by=list(self.partition_by) or None,
                        storage_options=self.location.delta_storage_options())
        self._table = None
        log.warning("Delta table %s: added %s, which the stream's schema gained", self.location.uri,
                    ", ".join(added))

    @property
    def write_location(self) -> Location:
        return self.location

    # --- exactly-once commits ---
    def committed_batch(self, app_id: str) -> int:
        """The last batch of this query in the table, or -1."""
        version = self.table().transaction_version(app_id)
        return -1 if version is None else version

    def commit(self, files: list[WrittenFile], app_id: str, batch_id: int) -> bool:
        """Add the files and record (app_id, batch_id) in one log entry; False if already committed."""
        dt = self.table()
        last = dt.transaction_version(app_id)
        if last is not None and last >= batch_id:
            log.info("batch %d is already in %s (query %s committed up to %d); not adding it again",
                     batch_id, self.location.uri, app_id, last)
            return False
        actions = [add_action(f) for f in files]
        dt.create_write_transaction(
            actions, "append", dt.schema(), partition_by=list(self.partition_by) or None,
            commit_properties=CommitProperties(
                app_transactions=[Transaction(app_id, batch_id)],
                custom_metadata={"s3sqs.queryId": app_id, "s3sqs.batchId": str(batch_id)}))
        return True

    # --- inspection and compaction ---
    def files(self) -> list[TableFile]:
        t = pa.table(self.table().get_add_actions(flatten=True))
        cols = [f"partition.{c}" for c in self.partition_by]
        rows = t.select(["path", "size_bytes", *cols]).to_pylist()
        return [TableFile(r["path"], r["size_bytes"], tuple(r[c] for c in cols)) for r in rows]

    def compact(self, target_size: int, dry_run: bool = False, progress=print) -> tuple[FileSizes, FileSizes]:
        """Rewrite small files with delta-rs's optimize, one partition at a time (each its own commit, so
        progress shows and an interruption keeps what is done). Optimize conflicts only with operations
        that remove files, so the stream's appends go on meanwhile."""
        files = self.files()
        before = FileSizes.of([f.size for f in files])
        groups = plan_compaction(files, target_size)
        partitions = sorted({g[0].partition for g in groups}, key=repr)
        progress(f"{self.location.uri}: {before.describe()}; {sum(len(g) for g in groups)} small files in "
                 f"{len(partitions)} partition(s) to combine into about {len(groups)}")
        if dry_run or not groups:
            return before, before
        for i, partition in enumerate(partitions, 1):
            # Delta spells a null partition value as "" in filters (and in partitionValues).
            filters = [(c, "=", "" if v is None else v) for c, v in zip(self.partition_by, partition)]
            started = time.monotonic()
            metrics = self.table().optimize.compact(partition_filters=filters or None, target_size=target_size)
            progress(f"  [{i}/{len(partitions)}] {_describe_partition(self.partition_by, partition)}: "
                     f"{metrics['numFilesRemoved']} files -> {metrics['numFilesAdded']} "
                     f"in {time.monotonic() - started:.1f} s")
        after = FileSizes.of([f.size for f in self.files()])
        return before, after


def add_action(f: WrittenFile) -> AddAction:
    # The path as it is on storage: delta-rs URI-encodes it for the log itself.
    return AddAction(f.relative_path, f.size, dict(f.partition), f.modification_time_ms,
                     True, f.stats)


def check_columns(where: str, table_json: str, ours_json: str) -> None:
    """Names and types must match (nullability may differ; the order may too: Delta resolves by name)."""
    have = _columns(table_json)
    want = _columns(ours_json)
    if sorted(have) != sorted(want):
        raise SinkError(f"Delta table {where} has columns {', '.join(have)}, but the output has {', '.join(want)}; "
                        "make --schema/--transform produce the table's columns, or use another --table")


def _columns(schema_json: str) -> list[str]:
    """'name type' per field; a nested type as its compact JSON."""
    fields = json.loads(schema_json)["fields"]
    return [f"{f['name']} {f['type'] if isinstance(f['type'], str) else json.dumps(f['type'], sort_keys=True)}"
            for f in fields]


def _describe_partition(columns: tuple[str, ...], values: tuple) -> str:
    return ", ".join(f"{c}={v}" for c, v in zip(columns, values)) or "(unpartitioned)"
