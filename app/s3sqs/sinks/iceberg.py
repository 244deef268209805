"""Iceberg tables through pyiceberg: the catalog (SQL locally, AWS Glue on AWS), create or check the
table, commit a batch's files exactly once, and compact small files.

Exactly once: a batch's files are added in one transaction that also sets the table property
`s3sqs.last-batch.<query id>` to the batch id (and adds the fields the stream's schema gained, if it
did), and the snapshot summary carries the query and batch ids.
A batch whose id is not above the newer of the two is already in the table and is skipped. The
property survives snapshot expiry (which drops old summaries); the summaries survive someone removing
the property.
"""
from __future__ import annotations

import logging
import time
import uuid
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import (CommitFailedException, NoSuchNamespaceError, NoSuchTableError,
                                  ValidationException)
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io.pyarrow import ArrowScan, parquet_file_to_data_file, pyarrow_to_schema
from pyiceberg.table import Table

from ..core.endpoint import Endpoint
from ..core.retry import retry_call
from .compaction import FileSizes, TableFile, plan_compaction
from .kinds.iceberg import CatalogConfig
from .location import Location, iceberg_s3_properties
from .paths import partition_path, partition_string
from .table_schema import added_fields
from .target import SinkError, WrittenFile

log = logging.getLogger("s3sqs.sinks")
MARKER_PREFIX = "s3sqs.last-batch."
QUERY_ID_SUMMARY, BATCH_ID_SUMMARY = "s3sqs.query-id", "s3sqs.batch-id"
CATALOG_NAME = "s3sqs"
COMPACT_COMMIT_ATTEMPTS = 10


def open_catalog(cfg: CatalogConfig, endpoint: Endpoint = Endpoint()) -> Catalog:
    props: dict[str, str] = {}
    if cfg.kind == "sql":
        props.update(type="sql", uri=cfg.uri)
    else:
        props["type"] = "glue"
        if endpoint.region:
            props["glue.region"] = endpoint.region
        if endpoint.url:
            props["glue.endpoint"] = endpoint.url
    if cfg.warehouse is not None:
        props["warehouse"] = iceberg_uri(cfg.warehouse.uri)
    props.update(iceberg_s3_properties(endpoint))
    # The SQL catalog keeps tables per catalog name: every tool here opens it under the same one.
    return load_catalog(CATALOG_NAME, **props)


def iceberg_uri(uri: str) -> str:
    """Iceberg metadata holds URIs: a local path becomes file:///path."""
    return uri if "://" in uri else f"file://{uri}"


def location_of(uri: str, endpoint: Endpoint) -> Location:
    return Location.parse(urlparse(uri).path if uri.startswith("file:") else uri, "the table location", endpoint)


class IcebergTarget:
    def __init__(self, catalog: Catalog, name: str, partition_by: tuple[str, ...] = (),
                 warehouse: Location | None = None, endpoint: Endpoint = Endpoint()):
        self.catalog = catalog
        self.name = name
        self.namespace, self.table_name = name.rsplit(".", 1)
        self.partition_by = tuple(partition_by)
        self.warehouse = warehouse
        self.endpoint = endpoint
        self._table: Table | None = None
        self._evolve_to: pa.Schema | None = None  # the stream's grown schema, until a batch commits it

    # --- table ---
    def table(self) -> Table:
        if self._table is None:
            try:
                self._table = self.catalog.load_table(self.name)
            except NoSuchTableError:
                raise SinkError(f"no Iceberg table {self.name} in the catalog") from None
        else:
            self._table = self._table.refresh()
        return self._table

    def ensure(self, schema: pa.Schema) -> None:
        """Create the table (identity-partitioned by --partition-by), or check the existing one matches."""
        try:
            table = self.catalog.load_table(self.name)
        except (NoSuchTableError, NoSuchNamespaceError):
            self._create(schema)
            return
        check_partitioning(self.name, table, self.partition_by)
        self._evolve_to = evolution(self.name, table, schema)
        self._table = table

    def _create(self, schema: pa.Schema) -> None:
        self.catalog.create_namespace_if_not_exists(self.namespace)
        # An explicit location keeps the table under the warehouse the job may write to, whatever
        # location the database itself has.
        location = iceberg_uri(self.warehouse.join(self.namespace, self.table_name)) if self.warehouse else None
        tx = self.catalog.create_table_transaction(self.name, schema=schema, location=location)
        if self.partition_by:
            with tx.update_spec() as spec:
                for c in self.partition_by:
                    spec.add_identity(c)
        tx.commit_transaction()
        self._table = self.catalog.load_table(self.name)
        log.info("created Iceberg table %s at %s (partitioned by %s)", self.name, self._table.location(),
                 list(self.partition_by))

    @property
    def write_location(self) -> Location:
        return location_of(self.table().location(), self.endpoint).child("data")

    # --- exactly-once commits ---
    def committed_batch(self, query_id: str, table: Table | None = None) -> int:
        """The last batch of this query in the table, or -1."""
        table = table or self.table()
        return last_committed_batch(table.properties, [s.summary.additional_properties for s in table.snapshots()
                                                       if s.summary is not None], query_id)

    def commit(self, files: list[WrittenFile], query_id: str, batch_id: int) -> bool:
        table = self.table()
        last = self.committed_batch(query_id, table)
        if last >= batch_id:
            log.info("batch %d is already in %s (query %s committed up to %d); not adding it again",
                     batch_id, self.name, query_id, last)
            return False
        with table.transaction() as tx:
            if self._evolve_to is not None and added_fields(table.schema().as_arrow(), self._evolve_to):
                with tx.update_schema() as update:  # new fields, nullable, in the commit of their first rows
                    update.union_by_name(self._evolve_to)
            tx.set_properties({MARKER_PREFIX + query_id: str(batch_id)})
            # The names are unique per write attempt, so the (costly) scan for duplicates is not needed.
            tx.add_files([iceberg_uri(f.uri) for f in files], check_duplicate_files=False,
                         snapshot_properties={QUERY_ID_SUMMARY: query_id, BATCH_ID_SUMMARY: str(batch_id)})
        self._evolve_to = None
        return True

    # --- inspection and compaction ---
    def _live_tasks(self, table: Table) -> dict:
        return {t.file.file_path: t for t in table.scan().plan_files()}

    def files(self) -> list[TableFile]:
        table = self.table()
        return [TableFile(path, t.file.file_size_in_bytes, (t.file.spec_id, *t.file.partition))
                for path, t in self._live_tasks(table).items()]

    def compact(self, target_size: int, dry_run: bool = False, progress=print) -> tuple[FileSizes, FileSizes]:
        """Rewrite each group of small files of one partition as one file, and swap them in one
        transaction (delete the old files, add the new one). Optimistic concurrency: when another commit
        lands first (the stream appending), reload and retry as long as every old file is still live;
        if one is gone, another compaction got there first and this group is dropped."""
        table = self.table()
        tasks = self._live_tasks(table)
        candidates = [TableFile(p, t.file.file_size_in_bytes, (t.file.spec_id, *t.file.partition))
                      for p, t in tasks.items() if not t.delete_files]
        before = FileSizes.of([t.file.file_size_in_bytes for t in tasks.values()])
        groups = plan_compaction(candidates, target_size)
        progress(f"{self.name}: {before.describe()}; {sum(len(g) for g in groups)} small files to combine "
                 f"into {len(groups)}")
        if dry_run:
            return before, before
        for i, group in enumerate(groups, 1):
            started = time.monotonic()
            where = ", ".join(f"{c}={v}" for c, v in zip(self._partition_columns(table, group[0].partition[0]),
                                                        group[0].partition[1:])) or "(unpartitioned)"
            outcome = self._rewrite_group(group, tasks)
            progress(f"  [{i}/{len(groups)}] {where}: {len(group)} files, {sum(f.size for f in group)} bytes "
                     f"{outcome} in {time.monotonic() - started:.1f} s")
        after = FileSizes.of([f.size for f in self.files()])
        return before, after

    @staticmethod
    def _partition_columns(table: Table, spec_id: int) -> tuple[str, ...]:
        return tuple(table.schema().find_column_name(f.source_id) for f in table.specs()[spec_id].fields)

    def _rewrite_group(self, group: list[TableFile], tasks: dict) -> str:
        table = self.table()
        data = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue()).to_table(
            [tasks[f.path] for f in group])
        columns = self._partition_columns(table, group[0].partition[0])
        folder = partition_path(columns, tuple(partition_string(v) for v in group[0].partition[1:]))
        new_path = f"{table.location()}/data/{folder + '/' if folder else ''}compacted-{uuid.uuid4().hex}.zstd.parquet"
        with table.io.new_output(new_path).create() as out:
            pq.write_table(data, out, compression="zstd")
        old = {f.path for f in group}

        def swap() -> str:
            table = self.table()
            live = {p: t.file for p, t in self._live_tasks(table).items() if p in old}
            if len(live) != len(old):
                table.io.delete(new_path)
                return "skipped: some of them were rewritten meanwhile"
            new_file = parquet_file_to_data_file(table.io, table.metadata, new_path)
            with table.transaction() as tx:
                with tx.update_snapshot(snapshot_properties={"s3sqs.operation": "compact"}).overwrite() as ow:
                    for f in live.values():
                        ow.delete_data_file(f)
                    ow.append_data_file(new_file)
            return f"-> 1 file of {new_file.file_size_in_bytes} bytes"
        try:  # a concurrent commit (the stream appending) is worth another try on the new table state
            return retry_call(swap, what=f"the compaction commit of {self.name}", attempts=COMPACT_COMMIT_ATTEMPTS,
                              retryable=lambda e: isinstance(e, (CommitFailedException, ValidationException)),
                              log=log, base_seconds=0.2, max_seconds=5)
        except (CommitFailedException, ValidationException):
            self.table().io.delete(new_path)
            raise SinkError(f"compacting {self.name}: {COMPACT_COMMIT_ATTEMPTS} commits in a row conflicted with "
                            "concurrent writers; run compact-table again later") from None


def last_committed_batch(properties: dict[str, str], summaries: list[dict[str, str]], query_id: str) -> int:
    """The newest batch of this query that the table records: its property, or a snapshot summary of
    a batch commit, whichever is newer; -1 if neither."""
    batches = [int(properties.get(MARKER_PREFIX + query_id, -1))]
    batches += [int(s[BATCH_ID_SUMMARY]) for s in summaries
                if s.get(QUERY_ID_SUMMARY) == query_id and BATCH_ID_SUMMARY in s]
    return max(batches)


def check_partitioning(name: str, table: Table, partition_by: tuple[str, ...]) -> None:
    fields = [(table.schema().find_column_name(f.source_id), str(f.transform)) for f in table.spec().fields]
    if fields != [(c, "identity") for c in partition_by]:
        have = ", ".join(f"{t}({c})" for c, t in fields) or "nothing"
        raise SinkError(f"Iceberg table {name} is partitioned by {have}, but --partition-by is "
                        f"{list(partition_by)}; use the table's partitioning or another --table")


def evolution(name: str, table: Table, schema: pa.Schema) -> pa.Schema | None:
    """The output's schema when it adds fields to the table's (schema evolution: the next batch's commit adds
    them, by union by name, with its files); None when they match; an error for any other difference."""
    added = added_fields(table.schema().as_arrow(), schema)
    if not added:
        check_columns(name, table, schema)
        return None
    log.warning("Iceberg table %s: the stream's schema gained %s; the next batch's commit adds them",
                name, ", ".join(added))
    return schema


def check_columns(name: str, table: Table, schema: pa.Schema) -> None:
    """Names and types must match, by name (Iceberg resolves columns by name; their order may differ)."""
    have = [f.name for f in table.schema().fields]
    if sorted(have) != sorted(schema.names):
        raise SinkError(f"Iceberg table {name} has columns {have}, but the output has {schema.names}; make "
                        "--schema/--transform produce the table's columns, or use another --table")
    ours = {f.name: f.field_type for f in pyarrow_to_schema(schema, name_mapping=table.schema().name_mapping).fields}
    diff = [f"{a.name}: table {a.field_type}, output {ours[a.name]}"
            for a in table.schema().fields if a.field_type != ours[a.name]]
    if diff:
        raise SinkError(f"Iceberg table {name} has other column types than the output ({'; '.join(diff)}); "
                        "cast in --transform, or use another --table")
