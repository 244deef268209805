"""Reading tables Spark's own writers made, as a reader outside Spark would: delta-rs for Delta, and
pyiceberg on the Hadoop catalog's newest metadata file for Iceberg."""
from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable
from pyiceberg.table import StaticTable

from devtools import jars
from tests.support.spark import pyspark_version


# Spark's writers run where their jars fit: Spark 4.0 / Scala 2.13, EMR's version (make setup fetches them).
only_where_table_jars_fit = pytest.mark.skipif(
    pyspark_version() != jars.SPARK_FOR_JARS,
    reason="Spark's Delta 4.0.0 / Iceberg 1.10.1 jars are built for Spark 4.0 (EMR's 4.0.2), not this Spark; "
           "make test runs this in its pass on .venv-spark40")


def iceberg_table(warehouse: Path, name: str) -> StaticTable:
    folder = Path(warehouse, *name.split(".")) / "metadata"
    version = (folder / "version-hint.text").read_text().strip()
    return StaticTable.from_metadata(str(folder / f"v{version}.metadata.json"))


def rows(table, columns: list[str]) -> list[tuple]:
    data = table.to_pyarrow_table(columns=columns) if isinstance(table, DeltaTable) \
        else table.scan(selected_fields=tuple(columns)).to_arrow()
    return list(zip(*(data.column(c).to_pylist() for c in columns)))


def column_names(table) -> list[str]:
    return [f.name for f in table.schema().fields]


def streaming_commits(table) -> list[tuple[str, int]]:
    """(query id, batch id) of every table commit Spark's streaming writer made, oldest first."""
    if isinstance(table, DeltaTable):
        found = [(h["operationParameters"]["queryId"], int(h["operationParameters"]["epochId"]))
                 for h in table.history() if h.get("operation") == "STREAMING UPDATE"]
        return found[::-1]  # history() is newest first
    out = []
    for s in table.snapshots():
        props = s.summary.additional_properties if s.summary else {}
        if "spark.sql.streaming.epochId" in props:
            out.append((props["spark.sql.streaming.queryId"], int(props["spark.sql.streaming.epochId"])))
    return out


def version(table) -> int | str:
    return table.version() if isinstance(table, DeltaTable) else table.metadata.current_snapshot_id
