"""The one role that may delete from the source bucket."""
from __future__ import annotations

from typing import Sequence

from aws_cdk import Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.nag import acknowledge_wildcards
from infra.policies import key_use_through_s3, list_statement


class SourceCleanerRole(Construct):
    """The one role that may delete from the source bucket, made only when cdk.json's sourceCleaning is on.

    `source-state clean` runs with it (a profile that assumes it): it reads every consumer's commit markers,
    keeps its journal, copies into the archive and deletes what every consumer that reads it has committed.
    Principals of the deploying account may assume it when their own IAM policy lets them.
    """

    def __init__(self, scope: Construct, id: str, *, source_bucket: s3.IBucket, read_patterns: Sequence[str],
                 checkpoint_bucket: s3.IBucket, marker_prefixes: Sequence[str], journal_prefix: str,
                 archive_bucket: str | None, archive_prefix: str, encryption_key: kms.IKey | None,
                 scheduled: bool, operator_roles: Sequence[str]) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        statements = [
            iam.PolicyStatement(
                sid="CleanSourceObjects",
                # The tagging reads: an archive copy keeps the source's tags.
                actions=["s3:GetObject", "s3:GetObjectVersion", "s3:GetObjectTagging", "s3:GetObjectVersionTagging",
                         "s3:DeleteObject", "s3:DeleteObjectVersion"],
                resources=[source_bucket.arn_for_objects(p) for p in dict.fromkeys(read_patterns)],
            ),
            iam.PolicyStatement(sid="ReadCommitMarkers", actions=["s3:GetObject"],
                                resources=[checkpoint_bucket.arn_for_objects(f"{p}*") for p in marker_prefixes]),
            iam.PolicyStatement(sid="KeepCleaningJournal", actions=["s3:GetObject", "s3:PutObject"],
                                resources=[checkpoint_bucket.arn_for_objects(f"{journal_prefix}*")]),
            list_statement("ListMarkersAndJournal", checkpoint_bucket, *marker_prefixes, journal_prefix),
        ]
        if archive_bucket is not None:
            statements.append(iam.PolicyStatement(
                sid="WriteArchive",
                # GetObject: the copy is checked (HEAD) before the source is deleted. PutObjectTagging: the copy
                # carries the source's tags. AbortMultipartUpload: a copy in parts (over 5 GiB) that fails is
                # aborted, not left as invisible parts.
                actions=["s3:PutObject", "s3:PutObjectTagging", "s3:GetObject", "s3:AbortMultipartUpload"],
                resources=[f"arn:{Aws.PARTITION}:s3:::{archive_bucket}/{archive_prefix}*"],
            ))
        if encryption_key is not None:  # the markers and the journal, in the checkpoint bucket
            statements.append(key_use_through_s3(encryption_key, "UseStackKeyThroughS3", [checkpoint_bucket]))
        self.role = iam.Role(
            self, "Role",
            description=f"The only role of {stack.stack_name} that may delete from the source bucket "
                        "(source-state clean)",
            assumed_by=iam.CompositePrincipal(*_trusted(scheduled, operator_roles)),
            inline_policies={"SourceCleaning": iam.PolicyDocument(statements=statements)},
        )
        acknowledge_wildcards(self, self.role, statements)


def _trusted(scheduled: bool, operator_roles: Sequence[str]) -> list[iam.IPrincipal]:
    """Who may assume the role: the stack's scheduled function, and the roles cdk.json names for source-state clean
    --apply (sourceCleaning.operatorRoles); not every principal of the account that may call sts:AssumeRole."""
    trusted: list[iam.IPrincipal] = [iam.ServicePrincipal("lambda.amazonaws.com")] if scheduled else []
    if operator_roles:
        trusted.append(iam.AccountRootPrincipal().with_conditions({"ArnLike": {"aws:PrincipalArn": [
            f"arn:{Aws.PARTITION}:iam::{Aws.ACCOUNT_ID}:role/{name}" for name in operator_roles]}}))
    return trusted
