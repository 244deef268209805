"""The EMR Serverless execution role of one consumer's job."""
from __future__ import annotations

from aws_cdk import ArnFormat, Aws, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import ConsumerConfig
from infra.contract import QUEUE_CONSUME_ACTIONS
from infra.nag import acknowledge_wildcards
from infra.policies import glue_tables, key_use_through_s3, key_use_through_sqs, list_statement

# What pyiceberg's Glue catalog calls to create and commit a table. CreateDatabase too: it is called to
# make sure the database exists (and answers AlreadyExists when it does).
ICEBERG_GLUE_ACTIONS = ["glue:CreateDatabase", "glue:CreateTable", "glue:GetDatabase", "glue:GetTable",
                        "glue:UpdateTable"]


def iceberg_glue_statement(stack: Stack, database: str) -> iam.PolicyStatement:
    """The job's Iceberg tables in one Glue database, and nothing else of the Data Catalog."""
    return iam.PolicyStatement(sid="UseIcebergGlueDatabase", actions=ICEBERG_GLUE_ACTIONS,
                               resources=glue_tables(stack, [database]))


class JobRole(Construct):
    """EMR Serverless execution role for one consumer, with every statement written out."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        consumer: ConsumerConfig,
        application_arn: str,
        source_bucket: s3.IBucket,
        read_pattern: str,
        read_prefix: str,
        checkpoint_bucket: s3.IBucket,
        checkpoint_prefix: str,
        output_prefix: str,
        artifacts_bucket: s3.IBucket,
        artifacts_prefix: str,
        monitoring_prefix: str,
        queue: sqs.IQueue,
        encryption_key: kms.IKey | None,
        log_group_name: str,
    ) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        statements = [
            iam.PolicyStatement(sid="ReadSourceObjects", actions=["s3:GetObject", "s3:GetObjectVersion"],
                                resources=[source_bucket.arn_for_objects(read_pattern)]),
            iam.PolicyStatement(
                sid="ReadWriteCheckpointAndOutput",
                actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                resources=[checkpoint_bucket.arn_for_objects(f"{checkpoint_prefix}*"),
                           checkpoint_bucket.arn_for_objects(f"{output_prefix}*")],
            ),
            # Folder prefixes end in "/": "checkpoints/ingest*" would also list "checkpoints/ingest-v2/".
            list_statement("ListCheckpointAndOutput", checkpoint_bucket, checkpoint_prefix, output_prefix),
            # What backfills list (includeExistingFiles, backfillInterval); also what makes S3 answer a read of a
            # key deleted before the job reads it with 404 rather than 403.
            list_statement("ListSourcePrefix", source_bucket, read_prefix),
            iam.PolicyStatement(sid="ReadJobArtifacts", actions=["s3:GetObject"],
                                resources=[artifacts_bucket.arn_for_objects(f"{artifacts_prefix}*")]),
            iam.PolicyStatement(sid="WriteMonitoringLogs", actions=["s3:PutObject"],
                                resources=[artifacts_bucket.arn_for_objects(f"{monitoring_prefix}*")]),
            iam.PolicyStatement(sid="ConsumeOwnQueue", actions=[*QUEUE_CONSUME_ACTIONS, "sqs:GetQueueUrl"],
                                resources=[queue.queue_arn]),
            *_log_statements(stack, log_group_name),
        ]
        if consumer.iceberg_glue_database:
            statements.append(iceberg_glue_statement(stack, consumer.iceberg_glue_database))
        if encryption_key is not None:
            # Through S3 for its checkpoint and code, through SQS for its own queue: not the other consumers'.
            statements += [key_use_through_s3(encryption_key, "UseStackKeyThroughS3",
                                              [checkpoint_bucket, artifacts_bucket]),
                           key_use_through_sqs(encryption_key, "UseStackKeyThroughSqs", [queue.queue_arn])]
        self.role = iam.Role(
            self,
            "Role",
            description=f"EMR Serverless job role for consumer {consumer.name}",
            assumed_by=iam.ServicePrincipal("emr-serverless.amazonaws.com").with_conditions({
                "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                "ArnLike": {"aws:SourceArn": application_arn},
            }),
            inline_policies={"JobAccess": iam.PolicyDocument(statements=statements)},
        )
        # Each wildcard is an object-key or log-stream pattern under a resource this consumer owns.
        acknowledge_wildcards(self, self.role, statements)


def _log_statements(stack: Stack, log_group_name: str) -> list[iam.PolicyStatement]:
    """Finding the consumer's log group, and writing its job runs' streams there."""
    log_group_arn = stack.format_arn(service="logs", resource="log-group", resource_name=log_group_name,
                                     arn_format=ArnFormat.COLON_RESOURCE_NAME)
    return [
        # DescribeLogGroups has no resource type (Service Authorization Reference): only "*" allows it; a
        # log-group:* pattern never matched.
        iam.PolicyStatement(sid="FindLogGroup", actions=["logs:DescribeLogGroups"], resources=["*"]),
        # Also how the job's metrics reach CloudWatch: it prints them as embedded metric format lines,
        # which EMR Serverless ships to this group and CloudWatch Logs turns into metrics. So the role has
        # no cloudwatch:PutMetricData, which can only be narrowed to a namespace, not to a consumer.
        iam.PolicyStatement(
            sid="WriteJobLogs",
            actions=["logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"],
            resources=[log_group_arn, f"{log_group_arn}:log-stream:*"],
        ),
    ]
