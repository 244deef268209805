"""The stack's buckets: access logs, the source (made here or imported), checkpoints and artifacts."""
from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3

from infra.config import StackConfig
from infra.constructs.secure_bucket import SecureBucket
from s3sqs.core.layout import EMR_LOGS_PREFIX
from infra.nag import acknowledge

# How long superseded object versions are kept in the versioned buckets before they expire.
NONCURRENT_VERSION_DAYS = 30


@dataclass(frozen=True)
class StackBuckets:
    """The buckets the rest of the stack names (the access-log bucket only takes their logs)."""

    source: s3.IBucket
    checkpoints: s3.IBucket
    artifacts: s3.IBucket


def _expire_superseded_versions() -> s3.LifecycleRule:
    """Only superseded versions and abandoned uploads expire: live objects are never touched."""
    return s3.LifecycleRule(id="ExpireSupersededVersions",
                            noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                            abort_incomplete_multipart_upload_after=Duration.days(7))


def _logged_bucket(stack: Stack, id: str, access_logs: s3.IBucket, **settings) -> s3.IBucket:
    """A versioned bucket whose access logs go below a folder of the access-log bucket named after it."""
    return SecureBucket(stack, id, access_logs=access_logs, access_log_prefix=f"{id.lower()}/", versioned=True,
                        **settings).bucket


def stack_buckets(stack: Stack, config: StackConfig, key: kms.IKey | None) -> StackBuckets:
    """Every bucket versioned: an overwrite or delete keeps the previous version for NONCURRENT_VERSION_DAYS."""
    # Access logs for every bucket here. S3 server access logs can only be written with SSE-S3.
    access_logs = SecureBucket(
        stack, "AccessLogs", access_logs=None, versioned=True,
        lifecycle_rules=[s3.LifecycleRule(id="ExpireAccessLogs", expiration=Duration.days(365),
                                          noncurrent_version_expiration=Duration.days(NONCURRENT_VERSION_DAYS),
                                          abort_incomplete_multipart_upload_after=Duration.days(7))],
    ).bucket
    acknowledge(access_logs, "AwsSolutions-S1",
                "This is the access-log destination; logging it into itself would loop.")
    if config.source_bucket.imported:
        # Its owner keeps its settings (versioning, encryption, policy): CDK cannot change an imported bucket.
        source = s3.Bucket.from_bucket_name(stack, "SourceBucket", config.source_bucket.bucket_name)
    else:
        source = _logged_bucket(stack, "Source", access_logs, lifecycle_rules=[_expire_superseded_versions()])
    checkpoints = _logged_bucket(stack, "Checkpoints", access_logs, encryption_key=key,
                                 lifecycle_rules=[_expire_superseded_versions()])
    # The job code a run used can be recovered even after it was overwritten or deleted.
    artifacts = _logged_bucket(stack, "Artifacts", access_logs, encryption_key=key, lifecycle_rules=[
        s3.LifecycleRule(id="ExpireMonitoringLogs", prefix=EMR_LOGS_PREFIX, expiration=Duration.days(90)),
        _expire_superseded_versions(),
    ])
    return StackBuckets(source, checkpoints, artifacts)
