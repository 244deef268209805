"""Reading what the Delta and Iceberg sinks committed, as a reader of the table would see it."""
from __future__ import annotations

from s3sqs.sinks.kinds.iceberg import CatalogConfig
from s3sqs.sinks.delta import DeltaTarget
from s3sqs.sinks.iceberg import IcebergTarget, open_catalog
from s3sqs.sinks.location import Location


def delta_target(path) -> DeltaTarget:
    return DeltaTarget(Location.parse(str(path), "table"))


def iceberg_target(catalog_db, name: str) -> IcebergTarget:
    return IcebergTarget(open_catalog(CatalogConfig("sql", f"sqlite:///{catalog_db}", None)), name)


def rows(target, columns: list[str]) -> list[tuple]:
    if isinstance(target, DeltaTarget):
        table = target.table().to_pyarrow_table(columns=columns)
    else:
        table = target.table().scan(selected_fields=tuple(columns)).to_arrow()
    return list(zip(*(table.column(c).to_pylist() for c in columns)))


def referenced_files(target) -> set[str]:
    """Absolute local paths of the table's live data files."""
    if isinstance(target, DeltaTarget):
        return {u.removeprefix("file://") for u in target.table().file_uris()}
    return {t.file.file_path.removeprefix("file://") for t in target.table().scan().plan_files()}


def batch_commits(target, batch_id: int) -> int:
    """How many table commits recorded this micro-batch."""
    if isinstance(target, DeltaTarget):
        return sum(1 for h in target.table().history() if h.get("s3sqs.batchId") == str(batch_id))
    return sum(1 for s in target.table().snapshots()
               if s.summary and s.summary.additional_properties.get("s3sqs.batch-id") == str(batch_id))
