"""The job's flags, defined once. app/job.py parses them; submit-job offers the ones marked `submit` with the
same names, types and help, and builds the job's command line from them (`job_argv`), so what submit-job
checks is what the job runs.

Every value is checked here, before Spark starts: a duration by the one duration grammar (core.units), a
KEY=VALUE by its shape, the sink flags by their sink kind (sinks/kinds/).
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any, Callable

from ..core.names import did_you_mean
from ..core.units import parse_duration_seconds
from ..core.vocabulary import FileFormat
from ..sinks.kinds import SinkKind
from ..sinks.kinds.base import DEFAULT_TARGET_FILE_SIZE, TABLE_WRITERS
from ..sinks.kinds.iceberg import JOB_CATALOGS

DEFAULT_TRIGGER_INTERVAL = "5 seconds"
DEFAULT_IDLE_CHECKS = 3


def duration_flag(text: str) -> str:
    """A duration with a unit ('10 seconds', '30s', '2 minutes'; 0 seconds: as fast as batches go), as written."""
    try:
        parse_duration_seconds(text, bare_unit=None)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration; write e.g. '10 seconds', 30s or 2m") from None
    return text


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} must look like key=value, e.g. maxFilesPerTrigger=500")
    return key.strip(), value


def comma_list(text: str) -> tuple[str, ...]:
    """"a, b,,c" -> ("a", "b", "c")."""
    return tuple(item.strip() for item in text.split(",") if item.strip())


def whole_number(minimum: int, what: str = "a whole number", too_small: str = "") -> Callable[[str], int]:
    """An argument type for a whole number of at least `minimum`."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if n < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} {too_small or f'must be at least {minimum}'}")
        return n
    parse.__name__ = what
    return parse


positive_int = whole_number(1)


def choice(what: str, values, *, fold: Callable[[str], str] = str) -> Callable[[str], str]:
    """An argument type accepting one of `values` (after `fold`, e.g. str.lower), with a did-you-mean.
    argparse's own `choices=` lists the values but does not suggest one, and checks before `type` runs."""
    allowed = tuple(values)
    canonical = {fold(a): a for a in allowed}  # matched folded, returned as spelled ("binaryfile" -> "binaryFile")

    def parse(text: str) -> str:
        v = fold(text.strip())
        if v in canonical:
            return canonical[v]
        raise argparse.ArgumentTypeError(
            f"{text!r} is not {what}{did_you_mean(v, allowed)}; one of: {', '.join(allowed)}")

    parse.__name__ = what  # argparse names the type in some messages
    return parse


@dataclass(frozen=True)
class Flag:
    name: str                       # "--format"
    help: str
    type: Callable[[str], Any] | None = None
    switch: bool = False            # takes no value
    repeat: bool = False            # may be given several times (a list)
    default: Any = None
    required: bool = False          # by the job (submit-job may fill it in from the stack outputs)
    submit: bool = True             # offered by submit-job with the same meaning
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")

    def add_to(self, p, required: bool | None = None) -> None:
        kw: dict[str, Any] = {"help": self.help}
        if self.switch:
            kw["action"] = "store_true"
        else:
            kw.update(type=self.type, default=[] if self.repeat else self.default, metavar=self.metavar)
            if self.repeat:
                kw["action"] = "append"
            kw["required"] = self.required if required is None else required
        p.add_argument(self.name, **kw)


FORMATS = tuple(f.value for f in FileFormat)
SOURCE = (
    Flag("--queue-url", "the consumer's SQS queue URL", required=True, submit=False),
    Flag("--format", f"format of the S3 files: {', '.join(FORMATS)}", type=choice("a file format", FORMATS, fold=str.lower),
         required=True, metavar="FORMAT"),
    Flag("--schema", 'schema as a DDL string, e.g. "id LONG, name STRING"; without it the source infers the '
         "schema from the first files and keeps it under CHECKPOINT/_schemas (see docs/source.md, Schema)"),
    Flag("--checkpoint", "checkpoint location (local path or s3://)", required=True),
    Flag("--option", "source option, repeatable (e.g. --option maxFilesPerTrigger=500)", type=key_value,
         repeat=True, metavar="KEY=VALUE"),
    Flag("--state-location", "source state location (default: CHECKPOINT/source-state)", submit=False),
    Flag("--endpoint-url", "S3/SQS-compatible endpoint, e.g. the local stand-in (default: AWS_ENDPOINT_URL, as "
         "the AWS SDKs take it)", submit=False),
    Flag("--region", "AWS region of the queue (default: from the URL or the environment)", submit=False),
)
OUTPUT = (
    Flag("--output", "output location: the Parquet files (--sink parquet), else the default table location "
                     "(delta) or warehouse (iceberg)"),
    Flag("--partition-by", "comma-separated output partition columns", type=comma_list, default=(),
         metavar="C1,C2"),
    Flag("--sink", "parquet: Parquet files in --output with Spark's file sink log (default); delta or iceberg: a "
                   "table; each committed once per micro-batch", type=choice("a sink", [k.value for k in SinkKind], fold=str.lower), default="parquet",
         metavar="{" + ",".join(SinkKind) + "}"),
    Flag("--table", "delta: the table's location (local path or s3://; default --output); iceberg: the catalog "
                    "table name, namespace.table"),
    Flag("--transform", "a function DataFrame -> DataFrame applied to the stream before the sink",
         metavar="MODULE:FUNCTION"),
    Flag("--target-file-size", f"delta/iceberg: aim each micro-batch's data files at this size (default "
                               f"{DEFAULT_TARGET_FILE_SIZE})", metavar="SIZE"),
    Flag("--table-writer", "python (delta-rs, pyiceberg or, for parquet, the job itself commits the Parquet files "
                           "the executors write; needs no jars; the job's default) or spark (Spark's own Delta and "
                           "Iceberg writers, whose jars EMR bundles, submit-job's default for them; or Spark's "
                           "Parquet file sink)",
         type=choice("a table writer", TABLE_WRITERS, fold=str.lower), metavar="{" + ",".join(TABLE_WRITERS) + "}"),
    Flag("--rebalance-writes", "delta/iceberg with the python writer: shuffle each micro-batch's rows by partition "
                               "value before writing them, for fewer files per partition value, instead of writing "
                               "them in the tasks that read them (the default without --transform, and the faster)",
         switch=True),
    Flag("--catalog", "iceberg: glue (the AWS Glue Data Catalog; default), sql (pyiceberg's SQLAlchemy catalog, "
                      "e.g. SQLite for local runs) or hadoop (a warehouse folder; --table-writer spark only)",
         type=choice("a catalog", JOB_CATALOGS, fold=str.lower), submit=False,
         metavar="{" + ",".join(JOB_CATALOGS) + "}"),
    Flag("--catalog-uri", "iceberg with --catalog sql: e.g. sqlite:////tmp/catalog.db", metavar="URL",
         submit=False),
    Flag("--warehouse", "iceberg: where a new table's folder is created, WAREHOUSE/namespace/table "
                        "(default --output)", submit=False),
)
RUN = (
    Flag("--trigger-interval", f"micro-batch interval (default: {DEFAULT_TRIGGER_INTERVAL})", type=duration_flag),
    Flag("--until-drained", "stop once the queue is empty and every planned batch is committed", switch=True),
    Flag("--idle-checks", f"with --until-drained: consecutive drained checks, 0.5 s apart, before stopping "
                          f"(default {DEFAULT_IDLE_CHECKS})", type=positive_int, default=DEFAULT_IDLE_CHECKS,
         submit=False),
    Flag("--name", "query name", default="s3-sqs-ingest", submit=False),
    Flag("--verbose", "show Spark's own INFO logs (default: warnings only)", switch=True, submit=False),
    Flag("--debug", "show the traceback of an error", switch=True, submit=False),
)
ALL = SOURCE + OUTPUT + RUN
BY_NAME = {f.name: f for f in ALL}


def job_parser() -> argparse.ArgumentParser:
    from ..config.options import source_options_help

    p = argparse.ArgumentParser(prog="job.py", allow_abbrev=False,
                                description="Stream S3 files announced on SQS into Parquet files or a Delta or "
                                            "Iceberg table.",
                                epilog=source_options_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in SOURCE + RUN:
        f.add_to(p)
    g = p.add_argument_group("sink")
    for f in OUTPUT:
        f.add_to(g)
    return p


def add_submit_flags(p, filled_in: tuple[str, ...] = ("--checkpoint",)) -> None:
    """The job's flags that submit-job offers; those in `filled_in` come from the stack outputs when left out."""
    for f in ALL:
        if f.submit:
            f.add_to(p, required=f.required and f.name not in filled_in)


def job_argv(values: dict[str, Any]) -> list[str]:
    """The job's command line for flag values keyed by dest (as argparse gives them); unset ones left out."""
    argv: list[str] = []
    for f in ALL:
        v = values.get(f.dest)
        if v is None or v is False or v == [] or v == () or (f.default is not None and v == f.default):
            continue
        if f.switch:
            argv.append(f.name)
        elif f.repeat:
            for item in v:
                argv += [f.name, "=".join(item) if isinstance(item, tuple) else str(item)]
        else:
            argv += [f.name, ",".join(v) if isinstance(v, tuple) else str(v)]
    return argv


def parse_job_args(argv: list[str]) -> argparse.Namespace:
    args = job_parser().parse_args(argv)
    # The SDKs' own variable reaches every client only through the flag: pyarrow's filesystems on the
    # executors and the table writers do not read it, and the source's options carry it to the executors.
    args.endpoint_url = args.endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or None
    args.options = dict(args.option)
    # Spark's trigger takes milliseconds; the flag keeps the text as written (submit-job passes it on).
    args.trigger_interval_ms = int(parse_duration_seconds(args.trigger_interval or DEFAULT_TRIGGER_INTERVAL,
                                                          None) * 1000)
    args.partition_by = list(args.partition_by)
    return args
