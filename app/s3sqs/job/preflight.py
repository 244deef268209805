"""Checks a run makes before Spark starts, so a wrong flag costs seconds, not a cluster start-up.

Each failure is a `PreflightError` whose message is one line: what is wrong, which flag or option,
and how to fix it.
"""
from __future__ import annotations

import os
from urllib.parse import urlparse

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from ..config.source_options import SourceOptions
from ..core import aws
from ..core.aws import error_code as _code
from ..core.errors import UsageError


class PreflightError(UsageError):
    """A run cannot start; the message names the flag or option and the fix."""


def _session_client(service: str, opts: SourceOptions):
    return aws.client(service, opts.endpoint.with_attempts(3), connect_timeout=5, read_timeout=10)


def check_credentials() -> None:
    if boto3.session.Session().get_credentials() is None:
        raise PreflightError("no AWS credentials found: set AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                             "or run where a role provides them (EMR's job role does)")


def check_queue(opts: SourceOptions) -> None:
    """The queue exists and this identity may read its attributes (as receiving needs)."""
    if not opts.queue_region and not boto3.session.Session().region_name:
        raise PreflightError(f"--queue-url {opts.queue_url}: no region in the URL; pass --region (or set "
                             "AWS_REGION)")
    try:
        _session_client("sqs", opts).get_queue_attributes(QueueUrl=opts.queue_url, AttributeNames=["QueueArn"])
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


def check_location(option: str, location: str, opts: SourceOptions) -> None:
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
        _session_client("s3", opts).list_objects_v2(Bucket=u.netloc, Prefix=u.path.lstrip("/"), MaxKeys=1)
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


def check_columns(flag: str, named: list[str], columns: list[str]) -> None:
    """Every column a flag names is one of the schema's."""
    missing = [c for c in named if c not in columns]
    if missing:
        raise PreflightError(f"{flag} {','.join(missing)}: not in --schema (its columns: {', '.join(columns)})")
