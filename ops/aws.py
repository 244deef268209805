"""AWS plumbing the operator tools share: a session in a known region, clients, and reading AWS errors."""
from __future__ import annotations

import boto3

from s3sqs.core import aws as core_aws
from s3sqs.core.aws import error_code  # noqa: F401  (the tools read AWS errors through ops.aws)
from s3sqs.core.endpoint import Endpoint

from ops.errors import OperatorError

# The codes SQS answers with for a queue URL that names no queue (the JSON and the query protocol).
NONEXISTENT_QUEUE = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")


def configured_region(region: str | None = None) -> str | None:
    """The region boto3 would use: the given one, else AWS_REGION / AWS_DEFAULT_REGION or the profile's.
    No network call."""
    return boto3.session.Session(region_name=region).region_name


def session(region: str | None) -> boto3.session.Session:
    """A session in `region`, or in the configured one; refuses to guess when there is none."""
    s = boto3.session.Session(region_name=region)
    if not s.region_name:
        raise OperatorError("no AWS region: pass --region or set AWS_REGION")
    return s


def client(sess: boto3.session.Session, service: str, endpoint_url: str | None = None,
           max_attempts: int | None = None):
    """A client of the session's region with botocore's standard retry mode (throttling and transient errors
    are retried there): the connector's one client factory, with the operator's session."""
    return core_aws.client(service, Endpoint(endpoint_url, sess.region_name, max_attempts or 3), session=sess)


def http_status(e: BaseException) -> int | None:
    return e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") if hasattr(e, "response") else None
