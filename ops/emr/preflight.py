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


# ---------------------------------------------------------------- where an EMR run keeps what must outlive it

# Source options that name a place the job writes to: on EMR it must be the consumer's S3 prefixes, or the
# state and output would live on the container's disk and vanish with it, after the messages were deleted.
WRITTEN_OPTIONS = ("stateLocation", "quarantineLocation", "schemaLocation")


def _under(uri: str, prefix: str) -> bool:
    u, p = uri.rstrip("/") + "/", prefix.rstrip("/") + "/"
    return u.startswith(p)


def check_emr_location(flag: str, uri: str, allowed: tuple[str, ...]) -> None:
    """`uri` is an s3:// location inside one of the consumer's `allowed` prefixes (the ones its job role may
    write); empty prefixes (outputs that predate them) only require s3://."""
    if not uri.startswith("s3://") or len(uri) <= 5 or uri[5] == "/":
        within = f" under {' or '.join(a for a in allowed if a)}" if any(allowed) else ""
        raise SubmitError(f"{flag} {uri}: an EMR run needs an s3:// location{within}; a local path would live on "
                          "the job's container and vanish when it ends, after the queue's messages are deleted")
    given = [a for a in allowed if a]
    if given and not any(_under(uri, a) for a in given):
        raise SubmitError(f"{flag} {uri}: outside the consumer's prefixes, which its job role alone may write; "
                          f"use a location under {' or '.join(given)} (or leave the flag out for the default)")


def check_emr_locations(checkpoint: str, output: str, options: dict[str, str], sink: str, table: str | None,
                        checkpoint_uri: str, output_uri: str) -> None:
    """Every place the job writes, for an EMR run: checkpoint, output, the source's state, quarantine and
    schema locations, and a Delta table's location."""
    check_emr_location("--checkpoint", checkpoint, (checkpoint_uri,))
    check_emr_location("--output", output, (output_uri,))
    wanted = {k.lower(): k for k in WRITTEN_OPTIONS}
    for key, value in options.items():
        name = wanted.get(key.lower().removeprefix("spark.s3conn."))
        if name:
            check_emr_location(f"--option {key}", value, (checkpoint_uri, output_uri))
    if sink == "delta" and table:
        check_emr_location("--table", table, (output_uri,))
    base = next((v for k, v in options.items() if k.lower().removeprefix("spark.s3conn.") == "basepath"), None)
    if base is not None and not base.startswith("s3://"):
        raise SubmitError(f"--option basePath={base}: an EMR run lists s3:// locations only (the source bucket)")


def check_iceberg_database(table: str | None, consumer: str, database: str | None) -> None:
    """An Iceberg table lives in the one Glue database the consumer's job role may use (`icebergGlueDatabase`
    in cdk.json, published in the Consumers output). None: outputs that predate the key, not checked."""
    if database is None or table is None:
        return
    namespace = table.rsplit(".", 1)[0] if "." in table else ""
    if not database:
        raise SubmitError(f"--sink iceberg: consumer {consumer!r} has no icebergGlueDatabase in cdk.json, so its job "
                          "role has no Glue access; add \"icebergGlueDatabase\": \"<database>\" to the consumer in "
                          "cdk.json and deploy, or use a consumer that has one")
    if namespace != database:
        raise SubmitError(f"--table {table}: consumer {consumer!r} may only keep Iceberg tables in Glue database "
                          f"{database!r} (its icebergGlueDatabase); use --table {database}.{table.rsplit('.', 1)[-1]}")
