"""A private, SSL-only, encrypted bucket."""
from __future__ import annotations

from typing import Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.policies import mark_policy_owned


class SecureBucket(Construct):
    """A private, SSL-only, encrypted bucket that logs access to `access_logs` (or is the log target)."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        access_logs: s3.IBucket | None,
        access_log_prefix: str = "",
        encryption_key: kms.IKey | None = None,
        versioned: bool = False,
        lifecycle_rules: Sequence[s3.LifecycleRule] = (),
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ) -> None:
        super().__init__(scope, id)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            enforce_ssl=True,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            encryption=s3.BucketEncryption.KMS if encryption_key else s3.BucketEncryption.S3_MANAGED,
            encryption_key=encryption_key,
            # A bucket key cuts KMS requests (and cost) for many small objects.
            bucket_key_enabled=True if encryption_key else None,
            versioned=versioned,
            lifecycle_rules=list(lifecycle_rules) or None,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix=access_log_prefix or None,
            removal_policy=removal_policy,
        )
        mark_policy_owned(self.bucket)
