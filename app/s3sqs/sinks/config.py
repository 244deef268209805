"""The sink's command-line flags, and the one validated settings object built from them.

Every check runs before Spark starts, and each message names the flag and says how to fix it.
"""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from ..options import parse_size_bytes
from .layout import SinkError
from .location import Location

SINKS = ("parquet", "delta", "iceberg")
CATALOGS = ("glue", "sql")
DEFAULT_TARGET_FILE_SIZE = "128m"
MIN_TARGET_FILE_SIZE = 1 << 10
MAX_TARGET_FILE_SIZE = 2 << 30
_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The sink flags. The job's own --output, --partition-by, --endpoint-url and --region apply too."""
    g = p.add_argument_group("sink")
    g.add_argument("--sink", choices=SINKS, default="parquet",
                   help="parquet: Spark's file sink into --output (default); delta or iceberg: a table, "
                        "committed once per micro-batch")
    g.add_argument("--table", help="delta: the table's location (local path or s3://; default --output); "
                                   "iceberg: the catalog table name, namespace.table")
    g.add_argument("--transform", metavar="MODULE:FUNCTION",
                   help="a function DataFrame -> DataFrame applied to the stream before the sink")
    g.add_argument("--target-file-size", metavar="SIZE",
                   help=f"delta/iceberg: aim each micro-batch's data files at this size "
                        f"(default {DEFAULT_TARGET_FILE_SIZE})")
    g.add_argument("--catalog", choices=CATALOGS,
                   help="iceberg: glue (the AWS Glue Data Catalog; default) or sql (a SQLAlchemy database, "
                        "e.g. SQLite for local runs)")
    g.add_argument("--catalog-uri", metavar="URL", help="iceberg with --catalog sql: e.g. sqlite:////tmp/catalog.db")
    g.add_argument("--warehouse", help="iceberg: where a new table's folder is created, "
                                       "WAREHOUSE/namespace/table (default --output)")


@dataclass(frozen=True)
class CatalogConfig:
    kind: str
    uri: str | None
    warehouse: Location | None
    warehouse_flag: str = "--warehouse"  # or "--output", when the warehouse defaulted to it


@dataclass(frozen=True)
class SinkConfig:
    kind: str
    partition_by: tuple[str, ...] = ()
    output: str | None = None            # parquet
    table: Location | None = None        # delta
    table_name: str | None = None        # iceberg, "namespace.table"
    catalog: CatalogConfig | None = None
    target_file_size: int = 128 << 20
    transform: str | None = None
    table_flag: str = "--table"          # delta: the flag that gave the table's location

    @property
    def is_table(self) -> bool:
        return self.kind in ("delta", "iceberg")

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
        if self.kind == "delta":
            return f"delta table {self.table.uri}"
        return f"iceberg table {self.table_name} ({self.catalog.kind} catalog)"


def sink_config(args: argparse.Namespace) -> SinkConfig:
    """Validate the parsed flags; raises SinkError naming the flag."""
    kind = args.sink
    partition_by = tuple(args.partition_by or ())
    endpoint, region = getattr(args, "endpoint_url", None), getattr(args, "region", None)
    output = getattr(args, "output", None)
    target = target_file_size(args.target_file_size or DEFAULT_TARGET_FILE_SIZE)
    transform = args.transform.strip() if args.transform else None
    if kind == "parquet" and args.target_file_size:
        raise SinkError("--target-file-size applies to --sink delta or iceberg; Spark's file sink writes a file "
                        "per task and partition")
    if kind != "iceberg":
        for flag, value in (("--catalog", args.catalog), ("--catalog-uri", args.catalog_uri),
                            ("--warehouse", args.warehouse)):
            if value:
                raise SinkError(f"{flag} applies to --sink iceberg only")
    if kind == "parquet":
        if args.table:
            raise SinkError("--table applies to --sink delta or iceberg; the parquet sink writes to --output")
        if not output:
            raise SinkError("--sink parquet needs --output, the folder the Parquet files go to")
        return SinkConfig("parquet", partition_by, output=output, transform=transform)
    if kind == "delta":
        if not (args.table or output):
            raise SinkError("--sink delta needs --table (or --output): the table's location")
        flag = "--table" if args.table else "--output"
        table = Location.parse(args.table or output, flag, endpoint, region)
        return SinkConfig("delta", partition_by, table=table, target_file_size=target, transform=transform,
                          table_flag=flag)
    # iceberg
    name = iceberg_table_name(args.table, args.catalog)
    catalog = catalog_config(args.catalog, args.catalog_uri, args.warehouse, output, endpoint, region)
    return SinkConfig("iceberg", partition_by, table_name=name, catalog=catalog, target_file_size=target,
                      transform=transform)


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


def catalog_config(kind: str | None, uri: str | None, warehouse: str | None, output: str | None,
                   endpoint_url: str | None, region: str | None, creates_tables: bool = True) -> CatalogConfig:
    """The Iceberg catalog. A job may create its table, so it needs a warehouse for the sql catalog;
    compact-table only opens existing tables."""
    kind = kind or "glue"
    if kind == "sql" and not uri:
        raise SinkError("--catalog sql needs --catalog-uri, a SQLAlchemy URL such as sqlite:////tmp/catalog.db")
    if kind == "glue" and uri:
        raise SinkError("--catalog-uri applies to --catalog sql; the Glue catalog is found through the region")
    text = warehouse or output
    if kind == "sql" and creates_tables and not text:
        raise SinkError("--catalog sql needs --warehouse (or --output): where new tables are created")
    flag = "--warehouse" if warehouse else "--output"
    location = Location.parse(text, flag, endpoint_url, region) if text else None
    return CatalogConfig(kind, uri, location, flag)


def target_file_size(text: str) -> int:
    try:
        n = parse_size_bytes(text)
    except ValueError:
        raise SinkError(f"--target-file-size {text!r} is not a size; write e.g. 128m, 512m or 1g") from None
    if not MIN_TARGET_FILE_SIZE <= n <= MAX_TARGET_FILE_SIZE:
        raise SinkError(f"--target-file-size {text!r} is out of range; allowed: 1k to 2g")
    return n
