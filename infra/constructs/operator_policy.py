"""The managed policy the operators' role attaches: what the operator tools call."""
from __future__ import annotations

from typing import Sequence

from aws_cdk import Stack
from aws_cdk import aws_emrserverless as emrs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.nag import acknowledge_wildcards
from infra.policies import glue_tables, key_use_through_s3, key_use_through_sqs, list_statement


class OperatorPolicy(Construct):
    """The managed policy an operator's role attaches: exactly what the operator tools call (tests/iam records
    them and evaluates each against this policy). submit-job, job-runs, source-state (read), redrive-dlq,
    compact-table, and assuming the source cleaner's role when there is one; not onboard-account, which edits
    resource policies and is the data owner's (docs/operations.md lists its actions)."""

    def __init__(self, scope: Construct, id: str, *, application: emrs.CfnApplication, artifacts_bucket: s3.IBucket,
                 artifacts_prefix: str, checkpoint_bucket: s3.IBucket, checkpoint_prefix: str, output_prefix: str,
                 job_roles: Sequence[iam.IRole], log_group_arns: Sequence[str], queues: Sequence[sqs.IQueue],
                 dlqs: Sequence[sqs.IQueue], glue_databases: Sequence[str], encryption_key: kms.IKey | None,
                 cleaner_role: iam.IRole | None) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        runs = f"{application.attr_arn}/jobruns/*"
        statements = [
            iam.PolicyStatement(sid="UploadJobArtifacts", actions=["s3:GetObject", "s3:PutObject",
                                                                   "s3:AbortMultipartUpload"],
                                resources=[artifacts_bucket.arn_for_objects(f"{artifacts_prefix}*")]),
            # Without it S3 answers a HEAD of an artifact not uploaded yet with 403, not 404.
            list_statement("ListJobArtifacts", artifacts_bucket, artifacts_prefix),
            iam.PolicyStatement(sid="RunJobs", actions=["emr-serverless:GetApplication", "emr-serverless:ListJobRuns",
                                                        "emr-serverless:StartJobRun"],
                                resources=[application.attr_arn]),
            iam.PolicyStatement(sid="WatchJobRuns", actions=[
                "emr-serverless:GetJobRun", "emr-serverless:CancelJobRun", "emr-serverless:GetDashboardForJobRun",
                "emr-serverless:TagResource"], resources=[runs]),
            iam.PolicyStatement(sid="PassJobRoles", actions=["iam:PassRole"], resources=[r.role_arn for r in job_roles],
                                conditions={"StringEquals": {"iam:PassedToService": "emr-serverless.amazonaws.com"}}),
            iam.PolicyStatement(sid="ReadJobLogs", actions=["logs:DescribeLogStreams", "logs:GetLogEvents"],
                                resources=[a for arn in log_group_arns for a in (arn, f"{arn}:log-stream:*")]),
            # source-state reads the checkpoints; compact-table rewrites the tables' files below output/.
            iam.PolicyStatement(sid="ReadSourceState", actions=["s3:GetObject"],
                                resources=[checkpoint_bucket.arn_for_objects(f"{checkpoint_prefix}*")]),
            iam.PolicyStatement(sid="CompactTables", actions=["s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"],
                                resources=[checkpoint_bucket.arn_for_objects(f"{output_prefix}*")]),
            list_statement("ListCheckpointsAndTables", checkpoint_bucket, checkpoint_prefix, output_prefix),
            iam.PolicyStatement(sid="RedriveDeadLetterQueues", actions=[
                "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
                "sqs:ListDeadLetterSourceQueues", "sqs:StartMessageMoveTask", "sqs:ListMessageMoveTasks",
                "sqs:CancelMessageMoveTask"], resources=[q.queue_arn for q in dlqs]),
            iam.PolicyStatement(sid="RedriveIntoQueues", actions=["sqs:SendMessage", "sqs:GetQueueAttributes"],
                                resources=[q.queue_arn for q in queues]),
        ]
        if glue_databases:
            statements.append(iam.PolicyStatement(sid="CompactIcebergTables", resources=glue_tables(
                stack, glue_databases), actions=["glue:GetDatabase", "glue:GetTable", "glue:UpdateTable"]))
        if encryption_key is not None:
            statements += [
                key_use_through_s3(encryption_key, "UseStackKeyThroughS3", [artifacts_bucket, checkpoint_bucket]),
                key_use_through_sqs(encryption_key, "UseStackKeyThroughSqs", [q.queue_arn for q in (*queues, *dlqs)],
                                    actions=("kms:Decrypt", "kms:GenerateDataKey"))]
        if cleaner_role is not None:
            statements.append(iam.PolicyStatement(sid="AssumeSourceCleaner", actions=["sts:AssumeRole"],
                                                  resources=[cleaner_role.role_arn]))
        self.policy = iam.ManagedPolicy(self, "Policy", description=f"What {stack.stack_name}'s operator tools "
                                        "call: attach it to the operators' role", statements=statements)
        acknowledge_wildcards(self, self.policy, statements)
