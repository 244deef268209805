"""What a run makes of its flags before Spark starts (`prepare`), and the checks it makes then, so a wrong
flag costs seconds, not a cluster start-up.

Each failure is a `PreflightError` (or the option's or sink's own UsageError) whose message is one line:
what is wrong, which flag or option, and how to fix it.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from ..config.source_options import SourceOptions
from ..core import aws
from ..core.aws import error_code as _code
from ..core.errors import UsageError

if TYPE_CHECKING:
    from ..config.ddl import Schema
    from ..sinks.kinds.base import Sink


class PreflightError(UsageError):
    """A run cannot start; the message names the flag or option and the fix."""


@dataclass(frozen=True)
class PreparedJob:
    spark_options: dict[str, str]   # the source's options as Spark takes them (strings)
    options: SourceOptions          # the same, validated
    schema: Schema | None           # None: inferred, kept under schemaLocation
    sink: Sink


def prepare(args: argparse.Namespace) -> PreparedJob:
    """Everything that can be made and checked of the job's flags before Spark starts."""
    from ..config.ddl import parse_schema
    from ..config.format_options import unreadable_column
    from ..config.options import parse_options
    from ..sinks.kinds import from_flags

    raw = source_options(args)
    opts = parse_options(raw)
    schema = parse_schema(args.schema) if args.schema else None  # None: inferred, kept under schemaLocation
    if schema is not None:
        named = [("option partitionColumns", opts.partition_columns)]
        if not args.transform:  # a transform may make the partition columns
            named.insert(0, ("--partition-by", args.partition_by))
        for flag, columns in named:
            check_columns(flag, columns, schema.names)
        if problem := unreadable_column(opts.file_format, [(c.name, c.type.simple) for c in schema.columns]):
            raise PreflightError(f"--schema: {problem}")
    sink = from_flags(args, import_transform=True)
    check_credentials()
    sqs, s3 = _session_clients(opts)
    check_queue(opts, sqs)
    places = [("--checkpoint", args.checkpoint)] + ([("--state-location", args.state_location)]
                                                    if args.state_location else []) + sink.locations()
    for flag, location in places:
        check_location(flag, location, s3)
    return PreparedJob(raw, opts, schema, sink)


def source_options(args: argparse.Namespace) -> dict[str, str]:
    """The source's options as Spark takes them, from the job's flags and --option."""
    from ..config.options import job_source_options

    return job_source_options(args.format, args.queue_url, args.checkpoint, args.options, args.region,
                              args.endpoint_url, args.state_location)


def _session_clients(opts: SourceOptions) -> tuple[Any, Any]:
    """SQS and S3 clients that fail fast: a pre-flight check waits seconds, not the SDK's minutes."""
    endpoint = opts.endpoint.with_attempts(3)
    return tuple(aws.client(service, endpoint, connect_timeout=5, read_timeout=10) for service in ("sqs", "s3"))


def check_credentials() -> None:
    if boto3.session.Session().get_credentials() is None:
        raise PreflightError("no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                             "or run where a role provides them (EMR's job role does)")


def check_queue(opts: SourceOptions, sqs) -> None:
    """The queue exists and this identity may read its attributes (as receiving needs)."""
    if not opts.queue_region and not boto3.session.Session().region_name:
        raise PreflightError(f"--queue-url {opts.queue_url}: no region in the URL; pass --region (or set "
                             "AWS_REGION)")
    try:
        sqs.get_queue_attributes(QueueUrl=opts.queue_url, AttributeNames=["QueueArn"])
    except NoCredentialsError:
        check_credentials()
        raise
    except ClientError as e:
        code = _code(e)
        if code in ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"):
            raise PreflightError(f"--queue-url {opts.queue_url}: no such queue in region "
                                 f"{opts.queue_region or boto3.session.Session().region_name}; check the URL "
                                 "(cdk-outputs.json has each consumer's queueUrl)") from None
        if code in ("AccessDenied", "AccessDeniedException", "AWS.SimpleQueueService.AccessDenied"):
            raise PreflightError(f"--queue-url {opts.queue_url}: access denied; the role needs sqs:ReceiveMessage, "
                                 "sqs:DeleteMessage and sqs:GetQueueAttributes on it (see onboard-account)") from None
        raise PreflightError(f"--queue-url {opts.queue_url}: {code or 'error'}: {e}") from None
    except BotoCoreError as e:
        raise PreflightError(f"--queue-url {opts.queue_url}: cannot reach SQS ({e}); check the URL, "
                             "--endpoint-url and the network") from None


def check_location(option: str, location: str, s3) -> None:
    """A local path can be created, or an s3:// bucket exists and its prefix may be listed."""
    if not location.startswith("s3://"):
        path = location.removeprefix("file://")
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as e:
            raise PreflightError(f"{option} {location}: cannot create it ({e.strerror})") from None
        return
    u = urlparse(location)
    try:
        s3.list_objects_v2(Bucket=u.netloc, Prefix=u.path.lstrip("/"), MaxKeys=1)
    except ClientError as e:
        code = _code(e)
        if code == "NoSuchBucket":
            raise PreflightError(f"{option} {location}: bucket {u.netloc!r} does not exist; use the stack's "
                                 "checkpoint bucket (cdk-outputs.json: CheckpointBucketName)") from None
        if code in ("AccessDenied", "AllBucketsPrefixAccessDenied"):
            raise PreflightError(f"{option} {location}: access denied; the role may only use its consumer's "
                                 "prefixes (checkpointUri in cdk-outputs.json)") from None
        raise PreflightError(f"{option} {location}: {code or 'error'}: {e}") from None
    except BotoCoreError as e:
        raise PreflightError(f"{option} {location}: cannot reach S3 ({e})") from None


def columns_problem(flag: str, named, columns) -> str | None:
    """The first column a flag names that the schema lacks, as one line; None when every one is there.
    Exact names, as the job and the source compare them (submit-job asks the same)."""
    from ..core.names import did_you_mean

    for c in named:
        if c not in columns:
            return (f"{flag}: column {c!r} is not in --schema{did_you_mean(c, list(columns))}; its columns are: "
                    f"{', '.join(columns)}")
    return None


def check_columns(flag: str, named, columns) -> None:
    if problem := columns_problem(flag, named, columns):
        raise PreflightError(problem)
