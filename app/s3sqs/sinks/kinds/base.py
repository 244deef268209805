"""What every sink is (`Sink`): the settings all kinds share, validated from the job's flags, and the
protocol each kind implements: where it writes, how it describes itself, the Spark settings it needs, the
table it opens and the writer that feeds it. Each message names the flag and says how to fix it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, Field, ValidationError, field_validator

from ...config.fields import Size, one_line
from ...core.endpoint import Endpoint
from ...core.errors import UsageError
from ..location import Location
from ..target import SinkError, TableTarget

# python: delta-rs / pyiceberg (or, for parquet, the file sink's log: file_sink_log.py) commit Parquet files
# the executors write (no jars needed; the job's default); spark: Spark's own Delta / Iceberg writers (their
# jars on Spark's classpath, as EMR bundles them), or its Parquet file sink.
TABLE_WRITERS = ("python", "spark")
DEFAULT_TARGET_FILE_SIZE = "128m"
MIN_TARGET_FILE_SIZE = 1 << 10
MAX_TARGET_FILE_SIZE = 2 << 30
CATALOG_FLAGS = (("--catalog", "catalog"), ("--catalog-uri", "catalog_uri"), ("--warehouse", "warehouse"))


@dataclass(frozen=True)
class Sink:
    """One sink of the job, with the AWS context (`endpoint`) its tables and files are reached through."""
    kind: ClassVar[str]
    takes_catalog: ClassVar[bool] = False    # --catalog, --catalog-uri, --warehouse
    # Table files the python writer sizes (--target-file-size) and may shuffle first (--rebalance-writes);
    # without them, Spark's writer writes the rows outside a direct write.
    writes_table_files: ClassVar[bool] = True
    partition_by: tuple[str, ...] = ()
    transform: str | None = None
    table_writer: str = "python"             # TABLE_WRITERS
    rebalance_writes: bool = False           # delta/iceberg, python writer: write after a shuffle
    target_file_size: int = 128 << 20
    endpoint: Endpoint = Endpoint()

    # --- from the flags ---
    @classmethod
    def from_flags(cls, args: Any) -> "Sink":
        """Validate the parsed flags (an argparse Namespace, or anything with the same attributes)."""
        endpoint = Endpoint(getattr(args, "endpoint_url", None), getattr(args, "region", None))
        cls.refuse_flags(args)
        if not cls.takes_catalog:
            for flag, name in CATALOG_FLAGS:
                if getattr(args, name, None):
                    raise SinkError(f"{flag} applies to --sink iceberg only")
        table_writer = (getattr(args, "table_writer", None) or "python").lower()
        if table_writer not in TABLE_WRITERS:
            raise SinkError(f"--table-writer {table_writer!r}: one of {', '.join(TABLE_WRITERS)}")
        rebalance = bool(getattr(args, "rebalance_writes", False))
        if rebalance and (not cls.writes_table_files or table_writer == "spark"):
            raise SinkError("--rebalance-writes applies to --sink delta or iceberg with the python table writer")
        common = {"partition_by": tuple(args.partition_by or ()), "table_writer": table_writer,
                  "transform": args.transform.strip() if args.transform else None,
                  "rebalance_writes": rebalance, "endpoint": endpoint}
        own = cls.own_settings(args, table_writer, endpoint)
        if cls.writes_table_files:
            common["target_file_size"] = target_file_size(args.target_file_size or DEFAULT_TARGET_FILE_SIZE)
        cls.refuse_combination(args, table_writer)
        return cls(**common, **own)

    @classmethod
    def refuse_flags(cls, args: Any) -> None:
        """Refuse flags this kind does not take, before anything else is checked."""

    @classmethod
    def refuse_combination(cls, args: Any, table_writer: str) -> None:
        """Refuse flags that are each valid but not together, once every value is checked."""

    @classmethod
    def own_settings(cls, args: Any, table_writer: str, endpoint: Endpoint) -> dict[str, Any]:
        """This kind's own settings, from its flags."""
        raise NotImplementedError

    # --- what the job asks of every sink ---
    @property
    def direct_writes(self) -> bool:
        """Whether the read tasks write the sink's files as they read (job/direct_write.py): the python
        writer, with no transform between reading and writing, unless --rebalance-writes. The parquet sink
        may still leave an output to Spark's file sink (`direct_write_refusal`)."""
        return self.table_writer == "python" and not self.transform and not self.rebalance_writes

    @property
    def uses_spark_writer(self) -> bool:
        return self.table_writer == "spark"

    def direct_write_refusal(self, schema) -> str | None:
        """Why Spark's file sink must write this output though `direct_writes`; None when the read tasks can
        (the tables' own checks raise instead)."""
        return None

    def locations(self) -> list[tuple[str, str]]:
        """(flag, location) of the places the sink creates files in, for the job's pre-flight check."""
        return []

    def describe(self) -> str:
        raise NotImplementedError

    def session_conf(self) -> dict[str, str]:
        """Spark settings the sink needs before the session starts (Spark's table writers only)."""
        return {}

    def emr_jars(self) -> tuple[str, ...]:
        """Where EMR keeps the jars of Spark's writer of this kind (not on its classpath unless named)."""
        return ()

    def emr_conf(self) -> dict[str, str]:
        """What submit-job sends to EMR Serverless: the bundled jars, and the session settings; nothing for a
        writer EMR's Spark has on its classpath (the python writers, Spark's Parquet file sink)."""
        if not self.uses_spark_writer or not self.emr_jars():
            return {}
        return {"spark.jars": ",".join(self.emr_jars()), **self.session_conf()}

    def open_target(self) -> TableTarget:
        """The table the python writer commits each batch to."""
        raise SinkError(f"--sink {self.kind} is not a table format")

    def spark_writer(self, df):
        """Spark's own writer into the sink (--table-writer spark), not yet started."""
        raise NotImplementedError

    def start(self, writer):
        """Start the streaming query built by `writer`."""
        return writer.start()

    def writer(self, df):
        """Apply --transform, then the writer into the sink, not yet started. Errors in the transform, the
        partition columns or an existing table's schema surface here, before the stream starts."""
        if self.transform:
            from ..transform import apply_transform, load_transform
            df = apply_transform(load_transform(self.transform), df, self.transform)
        if self.uses_spark_writer or not self.writes_table_files:  # parquet: Spark's file sink, but in direct writes
            return self.spark_writer(df)
        from ..stream import TableSink, open_table
        from ..table_files import TableFilesDataSource
        target = open_table(df.schema, self)
        df.sparkSession.dataSource.register(TableFilesDataSource)
        return df.writeStream.foreachBatch(TableSink(target, self))

    def direct_table(self, schema):
        """The table (created or checked for the output's `schema`) that the source's read tasks write
        into: its `spec` for them, and `writer(df)` for the stream of the files they wrote."""
        from ..stream import DirectTable
        return DirectTable(schema, self)

    def check_output_columns(self, columns: list[str]) -> None:
        missing = [c for c in self.partition_by if c not in columns]
        if missing:
            raise SinkError(f"--partition-by {','.join(missing)}: not in the output (its columns: "
                            f"{', '.join(columns)})")


class _TargetFileSize(BaseModel):
    size: Size = Field(alias="--target-file-size")

    @field_validator("size")
    @classmethod
    def _in_range(cls, n: int) -> int:
        if not MIN_TARGET_FILE_SIZE <= n <= MAX_TARGET_FILE_SIZE:
            raise ValueError("is out of range; allowed: 1k to 2g")
        return n


def target_file_size(text: str) -> int:
    """A --target-file-size value in bytes (also for tools that take the flag alone: compact-table)."""
    try:
        return _TargetFileSize.model_validate({"--target-file-size": text}).size
    except ValidationError as e:
        raise SinkError(one_line(e, lambda loc: "--target-file-size")) from None


def location(text: str, flag: str, endpoint: Endpoint) -> Location:
    try:
        return Location.parse(text, flag, endpoint)
    except UsageError as e:
        raise SinkError(str(e)) from None
