"""submit-job's pre-flight: the job's schema, partition columns and source options, checked the way the job
checks them, before anything is uploaded or started. No I/O.

Without it a typo is found only on EMR, by the job, and a STREAMING run is then retried up to
--max-failed-attempts-per-hour times before anyone reads why.
"""
from __future__ import annotations

from s3sqs.config.ddl import Schema, SchemaError, parse_schema
from s3sqs.config.format_options import unreadable_column
from s3sqs.config.options import OptionError, job_source_options, parse_options  # noqa: F401  (one owner)

from ops.emr import SubmitError
from s3sqs.core.names import did_you_mean


def check_schema(schema_text: str | None, partition_by: tuple[str, ...]) -> Schema | None:
    """The --schema DDL parses, and every --partition-by column is one of its columns. None: no --schema,
    the job infers it (its columns are known only then)."""
    if schema_text is None:
        return None
    try:
        schema = parse_schema(schema_text, flag="--schema")
    except SchemaError as e:
        raise SubmitError(str(e)) from None
    _check_columns("--partition-by", partition_by, schema)
    return schema


def check_options(raw: dict[str, str], schema: Schema | None) -> None:
    """The source accepts these options, and its partitionColumns are in the schema."""
    try:
        opts = parse_options(raw)
    except OptionError as e:
        raise SubmitError(f"--option: {e}") from None
    if schema is not None:
        _check_columns("--option partitionColumns", opts.partition_columns, schema)
        problem = unreadable_column(opts.file_format, [(c.name, c.type.simple) for c in schema.columns])
        if problem:
            raise SubmitError(f"--schema: {problem}")


def _check_columns(flag: str, columns: tuple[str, ...], schema: Schema) -> None:
    # Exact names, as the job and the source compare them.
    for c in columns:
        if c not in schema.names:
            raise SubmitError(f"{flag}: column {c!r} is not in --schema{did_you_mean(c, schema.names)}; "
                              f"its columns are: {', '.join(schema.names)}")
