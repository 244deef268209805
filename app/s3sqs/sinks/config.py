"""The sink's settings: one validated object built from the job's sink flags (job/flags.py defines them).

Every check runs before Spark starts, and each message names the flag and says how to fix it. The flags
combine by rules (which flag applies to which sink, what defaults to --output); the values themselves are
typed and checked by pydantic (config/fields.py).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..config.fields import Size, one_line
from ..core.endpoint import Endpoint
from ..core.errors import UsageError
from .location import Location
from .target import SinkError

SINKS = ("parquet", "delta", "iceberg")
CATALOGS = ("glue", "sql")           # pyiceberg's (the python writer, compact-table)
JOB_CATALOGS = CATALOGS + ("hadoop",)  # and Spark's Hadoop catalog, for Spark's Iceberg writer run locally
# python: delta-rs / pyiceberg (or, for parquet, the file sink's log: file_sink_log.py) commit Parquet files
# the executors write (no jars needed; the job's default);
# spark: Spark's own Delta / Iceberg writers (their jars on Spark's classpath, as EMR bundles them), or its
# Parquet file sink
TABLE_WRITERS = ("python", "spark")
DEFAULT_TARGET_FILE_SIZE = "128m"
MIN_TARGET_FILE_SIZE = 1 << 10
MAX_TARGET_FILE_SIZE = 2 << 30
_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


@dataclass(frozen=True)
class CatalogConfig:
    kind: str
    uri: str | None = None
    warehouse: Location | None = None
    warehouse_flag: str = "--warehouse"  # or "--output", when the warehouse defaulted to it


class SinkConfig(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    kind: str
    partition_by: tuple[str, ...] = ()
    output: str | None = None                 # parquet
    output_location: Location | None = None   # parquet: --output, when this job can write there itself
    table: Location | None = None             # delta
    table_name: str | None = None             # iceberg, "namespace.table"
    catalog: CatalogConfig | None = None
    target_file_size: Size = Field(128 << 20, alias="--target-file-size")
    transform: str | None = None
    table_flag: str = "--table"               # delta: the flag that gave the table's location
    table_writer: str = "python"              # TABLE_WRITERS
    rebalance_writes: bool = False            # delta/iceberg, python writer: write after a shuffle

    @property
    def direct_writes(self) -> bool:
        """Whether the read tasks write the sink's files as they read (job/direct_write.py): the python
        writer, with no transform between reading and writing, unless --rebalance-writes. For parquet the
        job may still leave an output to Spark's file sink (sinks.direct_write_refusal)."""
        return self.table_writer == "python" and not self.transform and not self.rebalance_writes

    @field_validator("target_file_size")
    @classmethod
    def _target(cls, n: int) -> int:
        if not MIN_TARGET_FILE_SIZE <= n <= MAX_TARGET_FILE_SIZE:
            raise ValueError("is out of range; allowed: 1k to 2g")
        return n

    def locations(self) -> list[tuple[str, str]]:
        """(flag, location) of the places a table sink creates files in, for the job's pre-flight check.
        The parquet sink's --output is Spark's to check, as before."""
        if self.kind == "delta":
            return [(self.table_flag, self.table.uri)]
        if self.kind == "iceberg" and self.catalog.warehouse is not None:
            return [(self.catalog.warehouse_flag, self.catalog.warehouse.uri)]
        return []

    def describe(self) -> str:
        if self.kind == "parquet":
            return self.output or ""
        spark = self.table_writer == "spark"
        if self.kind == "delta":
            return f"delta table {self.table.uri}" + (" (Spark's Delta writer)" if spark else "")
        return f"iceberg table {self.table_name} ({self.catalog.kind} catalog" + \
            (", Spark's Iceberg writer)" if spark else ")")


def sink_config(args: Any) -> SinkConfig:
    """Validate the parsed flags (an argparse Namespace, or anything with the same attributes); raises
    SinkError naming the flag."""
    kind = args.sink
    partition_by = tuple(args.partition_by or ())
    endpoint = Endpoint(getattr(args, "endpoint_url", None), getattr(args, "region", None))
    output = getattr(args, "output", None)
    size = args.target_file_size or DEFAULT_TARGET_FILE_SIZE
    transform = args.transform.strip() if args.transform else None
    if kind == "parquet" and args.target_file_size:
        raise SinkError("--target-file-size applies to --sink delta or iceberg; Spark's file sink writes a file "
                        "per task and partition")
    if kind != "iceberg":
        for flag, value in (("--catalog", args.catalog), ("--catalog-uri", args.catalog_uri),
                            ("--warehouse", args.warehouse)):
            if value:
                raise SinkError(f"{flag} applies to --sink iceberg only")
    table_writer = (getattr(args, "table_writer", None) or "python").lower()
    if table_writer not in TABLE_WRITERS:
        raise SinkError(f"--table-writer {table_writer!r}: one of {', '.join(TABLE_WRITERS)}")
    rebalance = bool(getattr(args, "rebalance_writes", False))
    if rebalance and (kind == "parquet" or table_writer == "spark"):
        raise SinkError("--rebalance-writes applies to --sink delta or iceberg with the python table writer")
    fields: dict[str, Any] = {"kind": kind, "partition_by": partition_by, "--target-file-size": size,
                              "transform": transform, "table_writer": table_writer, "rebalance_writes": rebalance}
    if kind == "parquet":
        if args.table:
            raise SinkError("--table applies to --sink delta or iceberg; the parquet sink writes to --output")
        if not output:
            raise SinkError("--sink parquet needs --output, the folder the Parquet files go to")
        fields.update(output=output, output_location=_parquet_location(output, endpoint))
        fields.pop("--target-file-size")
    elif kind == "delta":
        if not (args.table or output):
            raise SinkError("--sink delta needs --table (or --output): the table's location")
        flag = "--table" if args.table else "--output"
        fields.update(table=_location(args.table or output, flag, endpoint), table_flag=flag)
    else:
        check_catalog_writer(args.catalog or "glue", table_writer)
        fields.update(table_name=iceberg_table_name(args.table, args.catalog),
                      catalog=catalog_config(args.catalog, args.catalog_uri, args.warehouse, output, endpoint))
    try:
        cfg = SinkConfig.model_validate(fields)
    except ValidationError as e:
        raise SinkError(one_line(e, lambda loc: str(loc[0]) if str(loc[0]).startswith("--") else f"--{loc[0]}")) \
            from None
    if kind == "delta" and table_writer == "spark" and args.target_file_size:
        raise SinkError("--target-file-size applies to the python writer and to iceberg; Spark's Delta writer "
                        "writes a file per task and partition (compact the table with OPTIMIZE)")
    return cfg


def iceberg_table_name(text: str | None, catalog: str | None) -> str:
    name = (text or "").strip()
    if not name:
        raise SinkError("--sink iceberg needs --table namespace.table, the table's name in the catalog")
    if not _IDENTIFIER_RE.match(name):
        raise SinkError(f"--table {name!r} is not a catalog table name; write namespace.table "
                        "(letters, digits and _)")
    if (catalog or "glue") == "glue" and name != name.lower():
        raise SinkError(f"--table {name!r}: the Glue Data Catalog stores names in lower case; "
                        f"write {name.lower()!r}")
    return name


def check_catalog_writer(catalog: str, table_writer: str) -> None:
    """Which catalogs each Iceberg writer reaches: pyiceberg has no Hadoop catalog, and Spark's JDBC catalog
    would need a JDBC driver that Spark does not bundle."""
    if catalog == "hadoop" and table_writer != "spark":
        raise SinkError("--catalog hadoop needs --table-writer spark (pyiceberg has no Hadoop catalog); "
                        "for the python writer use --catalog sql")
    if catalog == "sql" and table_writer == "spark":
        raise SinkError("--catalog sql is pyiceberg's SQL catalog; with --table-writer spark use --catalog hadoop "
                        "locally (a warehouse folder) or glue on AWS")


def catalog_config(kind: str | None, uri: str | None, warehouse: str | None, output: str | None,
                   endpoint: Endpoint = Endpoint(), creates_tables: bool = True) -> CatalogConfig:
    """The Iceberg catalog. A job may create its table, so it needs a warehouse for the sql catalog;
    compact-table only opens existing tables."""
    kind = kind or "glue"
    if kind == "sql" and not uri:
        raise SinkError("--catalog sql needs --catalog-uri, a SQLAlchemy URL such as sqlite:////tmp/catalog.db")
    if kind == "glue" and uri:
        raise SinkError("--catalog-uri applies to --catalog sql; the Glue catalog is found through the region")
    text = warehouse or output
    if kind in ("sql", "hadoop") and creates_tables and not text:
        raise SinkError(f"--catalog {kind} needs --warehouse (or --output): where new tables are created")
    flag = "--warehouse" if warehouse else "--output"
    location = _location(text, flag, endpoint) if text else None
    return CatalogConfig(kind=kind, uri=uri, warehouse=location, warehouse_flag=flag)


def target_file_size(text: str) -> int:
    """A --target-file-size value in bytes, for tools that take the flag alone (compact-table)."""
    try:
        return SinkConfig.model_validate({"kind": "delta", "--target-file-size": text}).target_file_size
    except ValidationError as e:
        raise SinkError(one_line(e, lambda loc: "--target-file-size")) from None


def _parquet_location(text: str, endpoint: Endpoint) -> Location | None:
    """--output as a place this job writes to itself; None for a Hadoop scheme (s3a://, hdfs://) that only
    Spark's file sink reaches."""
    try:
        return Location.parse(text, "--output", endpoint)
    except UsageError:
        return None


def _location(text: str, flag: str, endpoint: Endpoint) -> Location:
    try:
        return Location.parse(text, flag, endpoint)
    except UsageError as e:
        raise SinkError(str(e)) from None
