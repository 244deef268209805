"""submit-job's pre-flight: the job's schema, partition columns and source options, checked the way the job
checks them, before anything is uploaded or started. No I/O.

Without it a typo is found only on EMR, by the job, and a STREAMING run is then retried up to
--max-failed-attempts-per-hour times before anyone reads why.
"""
from __future__ import annotations

from s3sqs.config.ddl import Schema, SchemaError, parse_schema
from s3sqs.config.format_options import unreadable_column
from s3sqs.config.options import (  # noqa: F401  (one owner)
    OptionError, job_source_options, option_name, parse_options,
)
from s3sqs.config.source_options import SourceOptions
from s3sqs.core.units import human_duration

from ops.emr import SubmitError
from s3sqs.job.preflight import columns_problem


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


def check_options(raw: dict[str, str], schema: Schema | None) -> SourceOptions:
    """The source accepts these options, and its partitionColumns are in the schema. Returns them, parsed."""
    try:
        opts = parse_options(raw)
    except OptionError as e:
        raise SubmitError(f"--option: {e}") from None
    if schema is not None:
        _check_columns("--option partitionColumns", opts.partition_columns, schema)
        problem = unreadable_column(opts.file_format, [(c.name, c.type.simple) for c in schema.columns])
        if problem:
            raise SubmitError(f"--schema: {problem}")
    return opts


def _check_columns(flag: str, columns: tuple[str, ...], schema: Schema) -> None:
    if problem := columns_problem(flag, columns, schema.names):  # the job's own check
        raise SubmitError(problem)


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
    for key, value in options.items():
        if option_name(key) in WRITTEN_OPTIONS:
            check_emr_location(f"--option {key}", value, (checkpoint_uri, output_uri))
    if sink == "delta" and table:
        check_emr_location("--table", table, (output_uri,))
    base = next((v for k, v in options.items() if option_name(k) == "basePath"), None)
    if base is not None and not base.startswith("s3://"):
        raise SubmitError(f"--option basePath={base}: an EMR run lists s3:// locations only (the source bucket)")


# ---------------------------------------------------------------- what an EMR run lists and backfills

def check_emr_backfill(opts: SourceOptions, given: dict[str, str], consumer: str, source_bucket: str | None,
                       read_prefix: str, role_arn: str = "") -> list[str]:
    """What the source's backfill would list or record stays where the consumer's job role may list and read:
    the stack's source bucket (`source_bucket`, its SourceBucketName output) under the consumer's read prefix
    (its `prefix` output; '' is the whole bucket). Refuses a run that would go outside it; returns warnings,
    one line each (an inventory report the stack grants no read of). `opts` are the parsed source options,
    `given` the --option values as the operator spelled them, `role_arn` the job role's (for the warning).

    includeExistingFiles and backfillInterval list basePath (planning/listing.py): outside the read prefix the
    job role may not list it, and could not read what a listing found (its s3:GetObject has the same scope), so
    the run is refused. backfillFromInventory lists nothing but records the report's objects under basePath (the
    whole report without it, planning/inventory.py), which are then read: the same scope, refused the same way."""
    listing = next((n for n in ("includeExistingFiles", "backfillInterval") if _listing_on(opts, n)), None)
    inventory = opts.backfill_from_inventory
    if listing is None and inventory is None:
        return []
    if not source_bucket:
        raise SubmitError(f"--option {_shown(given, listing or 'backfillFromInventory')}: the outputs file has no "
                          "SourceBucketName, so what the job role may list is unknown; re-run `cdk deploy "
                          "--outputs-file` with the current infra/ code")
    scope = f"s3://{source_bucket}/{read_prefix}"
    role = (f"consumer {consumer!r}'s job role may list and read only {scope} (the stack's source bucket, under "
            "the consumer's prefix)")
    base = opts.base_path
    if listing is not None and base is not None and not _under(base, scope):
        raise SubmitError(f"--option {_shown(given, listing)} lists basePath {base}, but {role}; use "
                          f"--option basePath={scope} or a location under it")
    notes = [listing_note(opts, given, listing)] if listing else []
    if inventory is None:
        return notes
    if base is not None and not _under(base, scope):
        raise SubmitError(f"--option {_shown(given, 'backfillFromInventory')} records the report's objects under "
                          f"basePath {base}, but {role}; use --option basePath={scope} or a location under it")
    if base is None and read_prefix:
        raise SubmitError(f"--option {_shown(given, 'backfillFromInventory')} without basePath records every object "
                          f"of the report, but {role}; add --option basePath={scope}")
    if _under(inventory, scope):
        return notes
    # A warning, not a refusal: the report lives in the bucket S3 Inventory writes to, whose bucket policy the
    # operator sets up anyway (for S3 to deliver the report) and may already grant this role its read; that grant
    # is outside the stack and cannot be seen from here (no I/O). Without it nothing is lost: the query fails at
    # its start naming the report (planning/inventory.py) before it records any of the report's objects, and the
    # queue's messages stay in the queue or the index until a run can go on.
    report_bucket = inventory.removeprefix("s3://").split("/", 1)[0]
    grantee = f" ({role_arn})" if role_arn else ""
    return notes + [f"warning: --option {_shown(given, 'backfillFromInventory')}: the stack grants consumer {consumer!r}'s "
            f"job role no read of s3://{report_bucket}/ (it reads only {scope}); grant it{grantee} s3:GetObject on "
            "the report's manifest and data files (in that bucket's policy, say) or the run fails at its start"]


def listing_note(opts: SourceOptions, given: dict[str, str], listing: str) -> str:
    """What a listing leaves out: the files last modified before maxFileAge (planning/listing.py)."""
    return (f"note: --option {_shown(given, listing)} lists {opts.base_path} and takes only the files modified within "
            f"maxFileAge ({human_duration(opts.max_file_age_seconds)}); older ones are left out: raise maxFileAge to reach them, or backfill from an S3 "
            "Inventory report (backfillFromInventory)")


def _listing_on(opts: SourceOptions, name: str) -> bool:
    return bool(opts.include_existing_files if name == "includeExistingFiles" else opts.backfill_interval_seconds)


def _shown(given: dict[str, str], name: str) -> str:
    """`key=value` of an option as the operator gave it (any case, cloudFiles. or spark.s3conn. before it)."""
    for key, value in given.items():
        if option_name(key) == name:
            return f"{key}={value}"
    return name


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
