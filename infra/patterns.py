"""One construct per pattern: secure bucket, S3 -> SNS fan-out topic, consumer queue, Spark application,
EMR job role.

Each construct is safe by default (SSL-only, encrypted, no public access) and writes its IAM
statements out in full, so the synthesized policies read the same as what is reviewed.
"""
from __future__ import annotations

from typing import Sequence

import jsii
from aws_cdk import Acknowledgment, ArnFormat, Aws, Duration, RemovalPolicy, Stack, Tags, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_emrserverless as emrs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import AlarmConfig, ConsumerConfig, ConsumerGrant, EmrConfig, EventFilterConfig
from infra.contract import POLICY_OWNER_TAG, QUEUE_CONSUME_ACTIONS, queue_name

# Consumers drain within minutes; four days covers a long weekend outage.
QUEUE_RETENTION = Duration.days(4)
# The maximum SQS allows: a DLQ must outlive its source queue so nothing expires before redrive.
DLQ_RETENTION = Duration.days(14)


def acknowledge(construct: Construct, rule_id: str, reason: str) -> None:
    """Record a cdk-nag finding as accepted, with the reason it is acceptable."""
    Validations.of(construct).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def mark_policy_owned(construct: Construct) -> None:
    """Tag a resource whose resource policy is part of this template, so onboarding knows a deploy may put it back."""
    Tags.of(construct).add(POLICY_OWNER_TAG, Stack.of(construct).stack_name)


def with_conditions(statement_conditions: dict, extra: dict) -> dict:
    """Merge two IAM condition blocks (operator -> key -> value); the grant's conditions never replace the
    statement's own."""
    out = {op: dict(keys) for op, keys in statement_conditions.items()}
    for op, keys in extra.items():
        for k, v in keys.items():
            if k in out.get(op, {}):
                raise ValueError(f"condition {op} {k} set twice")
            out.setdefault(op, {})[k] = v
    return out


def nag_resource_text(scope: Construct, value: str) -> str:
    """Render an ARN the way cdk-nag names it in a finding: `<Logical.Attr>` for GetAtt, `<Id>` for Ref."""
    return _render(Stack.of(scope).resolve(value))


def _render(node: object) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and len(node) == 1:
        (fn, arg), = node.items()
        if fn == "Ref":
            return f"<{arg}>"
        if fn == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
        if fn == "Fn::Join":
            return arg[0].join(_render(part) for part in arg[1])
    raise ValueError(f"cannot render {node!r} as a cdk-nag resource name")


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


@jsii.implements(s3.IBucketNotificationDestination)
class _TopicDestination:
    """Points notifications at a topic whose policy is already written (SnsDestination would add a looser one)."""

    def __init__(self, topic: sns.ITopic, policy: Construct) -> None:
        self._topic = topic
        self._policy = policy

    def bind(self, scope: Construct, bucket: s3.IBucket) -> s3.BucketNotificationDestinationConfig:
        return s3.BucketNotificationDestinationConfig(
            arn=self._topic.topic_arn,
            type=s3.BucketNotificationDestinationType.TOPIC,
            # S3 checks it may publish when the configuration is written, so the policy must exist first.
            dependencies=[self._policy],
        )


class FanOutTopic(Construct):
    """SNS topic fed by one bucket's ObjectCreated events; only that bucket, in this account, may publish."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        source_bucket: s3.IBucket,
        event_filter: EventFilterConfig,
        encryption_key: kms.IKey,
        key_encrypts_queues: bool,
    ) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        # Always a customer-managed key: S3 cannot publish to a topic under the AWS-managed SNS key. A fixed
        # name lets the key policy name the topic without a reference.
        topic_name = f"{stack.stack_name}-fan-out"
        self.topic = sns.Topic(self, "Topic", topic_name=topic_name, enforce_ssl=True, master_key=encryption_key)
        mark_policy_owned(self.topic)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowSourceBucketPublish",
                principals=[iam.ServicePrincipal("s3.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[self.topic.topic_arn],
                conditions={
                    "ArnLike": {"aws:SourceArn": source_bucket.bucket_arn},
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                },
            )
        )
        # S3 encrypts what it publishes to the topic with the topic's key.
        encryption_key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowSourceBucketNotifications",
                principals=[iam.ServicePrincipal("s3.amazonaws.com")],
                actions=["kms:GenerateDataKey*", "kms:Decrypt"],
                resources=["*"],
                conditions={
                    "ArnLike": {"aws:SourceArn": source_bucket.bucket_arn},
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                },
            )
        )
        if key_encrypts_queues:
            # SNS encrypts what it delivers to the consumer queues, which this key encrypts too.
            encryption_key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="AllowFanOutTopicDelivery",
                    principals=[iam.ServicePrincipal("sns.amazonaws.com")],
                    actions=["kms:GenerateDataKey*", "kms:Decrypt"],
                    resources=["*"],
                    conditions={"ArnEquals": {"aws:SourceArn": stack.format_arn(service="sns", resource=topic_name)}},
                )
            )
        policy = self.topic.node.find_child("Policy")
        key_filter = s3.NotificationKeyFilter(
            prefix=event_filter.prefix or None, suffix=event_filter.suffix or None
        )
        filters = [key_filter] if (event_filter.prefix or event_filter.suffix) else []
        source_bucket.add_event_notification(
            s3.EventType.OBJECT_CREATED, _TopicDestination(self.topic, policy), *filters
        )


def prefix_filter_policy(prefix: str) -> dict[str, sns.FilterOrPolicy]:
    """SNS body filter for raw S3 events: deliver when any record's object key starts with `prefix`."""
    return {
        "Records": sns.FilterOrPolicy.policy({
            "s3": sns.FilterOrPolicy.policy({
                "object": sns.FilterOrPolicy.policy({
                    "key": sns.FilterOrPolicy.filter(sns.SubscriptionFilter.string_filter(match_prefixes=[prefix])),
                }),
            }),
        }),
    }


class ConsumerQueue(Construct):
    """One consumer's queue and DLQ, subscribed to the fan-out topic, with its access policy and alarms."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        consumer: ConsumerConfig,
        topic: sns.ITopic,
        grant: ConsumerGrant,
        encryption_key: kms.IKey | None,
        alarms: AlarmConfig,
    ) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        encryption = sqs.QueueEncryption.KMS if encryption_key else sqs.QueueEncryption.SQS_MANAGED
        name = queue_name(stack.stack_name, consumer.name)
        # Built from the fixed name: the DLQ and the key policy may name the queue without a reference.
        queue_arn = stack.format_arn(service="sqs", resource=name)
        self.dlq = sqs.Queue(
            self,
            "DeadLetterQueue",
            enforce_ssl=True,
            encryption=encryption,
            encryption_master_key=encryption_key,
            retention_period=DLQ_RETENTION,
            # Only this consumer's queue may move messages here.
            redrive_allow_policy=sqs.RedriveAllowPolicy(
                redrive_permission=sqs.RedrivePermission.BY_QUEUE,
                source_queues=[sqs.Queue.from_queue_arn(self, "SourceQueueRef", queue_arn)],
            ),
            # What failed stays for inspection and redrive even when the stack is deleted.
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.queue = sqs.Queue(
            self,
            "Queue",
            queue_name=name,
            enforce_ssl=True,
            encryption=encryption,
            encryption_master_key=encryption_key,
            retention_period=QUEUE_RETENTION,
            visibility_timeout=Duration.seconds(consumer.visibility_timeout_seconds),
            # Long polling by default keeps empty receives (and their cost) down.
            receive_message_wait_time=Duration.seconds(20),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dlq, max_receive_count=consumer.max_receive_count),
        )
        acknowledge(self.dlq, "AwsSolutions-SQS3", "This queue is itself the dead-letter queue of the consumer queue.")
        mark_policy_owned(self.queue)
        mark_policy_owned(self.dlq)

        # Written out rather than SqsSubscription: that one would also grant SNS on the key with a
        # reference to the topic, and with one key for both that is a dependency cycle.
        self.queue.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowFanOutTopic",
                principals=[iam.ServicePrincipal("sns.amazonaws.com")],
                actions=["sqs:SendMessage"],
                resources=[self.queue.queue_arn],
                conditions={"ArnEquals": {"aws:SourceArn": topic.topic_arn}},
            )
        )
        self.subscription = sns.Subscription(
            self,
            "Subscription",
            topic=topic,
            endpoint=self.queue.queue_arn,
            protocol=sns.SubscriptionProtocol.SQS,
            # The connector reads S3 events directly; no SNS envelope to unwrap.
            raw_message_delivery=True,
            filter_policy_with_message_body=prefix_filter_policy(consumer.prefix) if consumer.prefix else None,
        )
        # SNS must be allowed to send before the subscription starts delivering.
        self.subscription.node.add_dependency(self.queue.node.find_child("Policy"))
        self.queue.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AllowConsumerAccount",
                principals=[iam.ArnPrincipal(p) for p in grant.principals],
                actions=list(QUEUE_CONSUME_ACTIONS),
                resources=[self.queue.queue_arn],
                conditions=grant.conditions or None,
            )
        )
        if encryption_key is not None:
            # Receiving from a KMS-encrypted queue needs Decrypt on its key: only through SQS, and only for
            # this queue (SQS passes the queue's ARN as the encryption context).
            encryption_key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=f"AllowConsumer{consumer.construct_id}Decrypt",
                    principals=[iam.ArnPrincipal(p) for p in grant.principals],
                    actions=["kms:Decrypt"],
                    resources=["*"],
                    conditions=with_conditions({"StringEquals": {
                        "kms:ViaService": f"sqs.{Aws.REGION}.amazonaws.com",
                        "kms:EncryptionContext:aws:sqs:arn": queue_arn,
                    }}, grant.conditions),
                )
            )

        period = Duration.seconds(alarms.period_seconds)
        self.dlq_alarm = _max_reaches_alarm(
            self, "DlqMessagesAlarm", alarms,
            description=f"Messages for consumer {consumer.name} reached its dead-letter queue",
            metric=self.dlq.metric_approximate_number_of_messages_visible(period=period, statistic="Maximum"),
            threshold=alarms.dlq_messages_threshold,
        )
        self.age_alarm = _max_reaches_alarm(
            self, "OldestMessageAgeAlarm", alarms,
            description=f"Consumer {consumer.name} is falling behind: its oldest message is too old",
            metric=self.queue.metric_approximate_age_of_oldest_message(period=period, statistic="Maximum"),
            threshold=alarms.oldest_message_age_seconds,
        )


def _max_reaches_alarm(
    scope: Construct, id: str, alarms: AlarmConfig, *, description: str, metric: cloudwatch.IMetric, threshold: int,
) -> cloudwatch.Alarm:
    """Alarm once the metric reaches the threshold. Missing data is no breach: SQS stops publishing metrics for
    a queue that has been idle for hours."""
    return cloudwatch.Alarm(
        scope,
        id,
        alarm_description=description,
        metric=metric,
        threshold=threshold,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods=alarms.evaluation_periods,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )


def _object_arn(bucket: s3.IBucket, pattern: str) -> str:
    return bucket.arn_for_objects(pattern)


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
        log_group_arn = stack.format_arn(
            service="logs", resource="log-group", resource_name=log_group_name,
            arn_format=_COLON,
        )
        statements = [
            iam.PolicyStatement(
                sid="ReadSourceObjects",
                actions=["s3:GetObject", "s3:GetObjectVersion"],
                resources=[_object_arn(source_bucket, read_pattern)],
            ),
            iam.PolicyStatement(
                sid="ReadWriteCheckpointAndOutput",
                actions=["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"],
                resources=[
                    _object_arn(checkpoint_bucket, f"{checkpoint_prefix}*"),
                    _object_arn(checkpoint_bucket, f"{output_prefix}*"),
                ],
            ),
            iam.PolicyStatement(
                sid="ListCheckpointAndOutput",
                actions=["s3:ListBucket"],
                resources=[checkpoint_bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [
                    f"{checkpoint_prefix}*", checkpoint_prefix.rstrip("/"),
                    f"{output_prefix}*", output_prefix.rstrip("/"),
                ]}},
            ),
            iam.PolicyStatement(
                sid="ReadJobArtifacts",
                actions=["s3:GetObject"],
                resources=[_object_arn(artifacts_bucket, f"{artifacts_prefix}*")],
            ),
            iam.PolicyStatement(
                sid="WriteMonitoringLogs",
                actions=["s3:PutObject"],
                resources=[_object_arn(artifacts_bucket, f"{monitoring_prefix}*")],
            ),
            iam.PolicyStatement(
                sid="ConsumeOwnQueue",
                actions=[*QUEUE_CONSUME_ACTIONS, "sqs:GetQueueUrl"],
                resources=[queue.queue_arn],
            ),
            iam.PolicyStatement(
                sid="FindLogGroup",
                actions=["logs:DescribeLogGroups"],
                resources=[stack.format_arn(service="logs", resource="log-group", resource_name="*",
                                            arn_format=_COLON)],
            ),
            iam.PolicyStatement(
                sid="WriteJobLogs",
                actions=["logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"],
                resources=[log_group_arn, f"{log_group_arn}:log-stream:*"],
            ),
        ]
        if consumer.iceberg_glue_database:
            statements.append(iceberg_glue_statement(stack, consumer.iceberg_glue_database))
        if encryption_key is not None:
            statements.append(
                iam.PolicyStatement(
                    sid="UseStackKey",
                    actions=["kms:Decrypt", "kms:GenerateDataKey"],
                    resources=[encryption_key.key_arn],
                )
            )
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
        for statement in statements:
            reason = _WILDCARD_REASONS.get(statement.sid)
            for resource in statement.resources:
                if reason and "*" in nag_resource_text(self, resource):
                    acknowledge(self.role, f"AwsSolutions-IAM5[Resource::{nag_resource_text(self, resource)}]",
                                reason)


# What pyiceberg's Glue catalog calls to create and commit a table. CreateDatabase too: it is called to
# make sure the database exists (and answers AlreadyExists when it does).
ICEBERG_GLUE_ACTIONS = ["glue:CreateDatabase", "glue:CreateTable", "glue:GetDatabase", "glue:GetTable",
                        "glue:UpdateTable"]


def iceberg_glue_statement(stack: Stack, database: str) -> iam.PolicyStatement:
    """The job's Iceberg tables in one Glue database, and nothing else of the Data Catalog."""
    def glue_arn(resource: str, name: str | None = None) -> str:
        return stack.format_arn(service="glue", resource=resource, resource_name=name)
    return iam.PolicyStatement(
        sid="UseIcebergGlueDatabase",
        actions=ICEBERG_GLUE_ACTIONS,
        resources=[glue_arn("catalog"), glue_arn("database", database), glue_arn("table", f"{database}/*")],
    )


_WILDCARD_REASONS = {
    "ReadSourceObjects": "Object keys are not known in advance; access is limited to the consumer's key prefix "
                         "and the notified suffix (the notified part of the bucket for a consumer without one).",
    "ReadWriteCheckpointAndOutput": "Spark writes many checkpoint and output files; limited to this consumer's "
                                    "checkpoint and output prefixes.",
    "ReadJobArtifacts": "The job reads its entry point and packed environment, uploaded under content-addressed "
                        "keys below this consumer's artifacts prefix.",
    "WriteMonitoringLogs": "EMR Serverless writes job logs with the job role, under this consumer's log prefix.",
    "FindLogGroup": "DescribeLogGroups is a list action that supports no narrower resource.",
    "WriteJobLogs": "Log stream names are chosen per job run; limited to this consumer's own log group.",
    "UseIcebergGlueDatabase": "The job creates and commits its Iceberg tables by name; limited to the tables "
                              "of the consumer's own Glue database.",
}


class SparkApplication(Construct):
    """EMR Serverless Spark application that starts on demand and stops when idle.

    It sets no application-wide S3 or CloudWatch log destination: each consumer's runs log to that
    consumer's own prefix and log group, which submit-job names per run, and a shared default would name
    a place no job role may write.
    """

    def __init__(self, scope: Construct, id: str, *, emr: EmrConfig) -> None:
        super().__init__(scope, id)
        self.application = emrs.CfnApplication(
            self,
            "Application",
            name=f"{Stack.of(self).stack_name}-spark",
            type="SPARK",
            release_label=emr.release_label,
            architecture=emr.architecture,
            auto_start_configuration=emrs.CfnApplication.AutoStartConfigurationProperty(enabled=True),
            auto_stop_configuration=emrs.CfnApplication.AutoStopConfigurationProperty(
                enabled=True, idle_timeout_minutes=emr.idle_timeout_minutes
            ),
            maximum_capacity=emrs.CfnApplication.MaximumAllowedResourcesProperty(
                cpu=f"{emr.max_vcpu} vCPU", memory=f"{emr.max_memory_gb} GB", disk=f"{emr.max_disk_gb} GB"
            ),
        )


def job_log_group(scope: Construct, id: str, *, name: str, retention_days: int,
                  encryption_key: kms.IKey | None) -> logs.LogGroup:
    """One consumer's CloudWatch Logs group for its job runs, kept when the stack goes."""
    return logs.LogGroup(
        scope,
        id,
        log_group_name=name,
        retention=logs.RetentionDays(_retention_enum(retention_days)),
        encryption_key=encryption_key,
        removal_policy=RemovalPolicy.RETAIN,
    )


def _retention_enum(days: int) -> str:
    return {
        1: "ONE_DAY", 3: "THREE_DAYS", 5: "FIVE_DAYS", 7: "ONE_WEEK", 14: "TWO_WEEKS", 30: "ONE_MONTH",
        60: "TWO_MONTHS", 90: "THREE_MONTHS", 120: "FOUR_MONTHS", 150: "FIVE_MONTHS", 180: "SIX_MONTHS",
        365: "ONE_YEAR", 400: "THIRTEEN_MONTHS", 545: "EIGHTEEN_MONTHS", 731: "TWO_YEARS", 1096: "THREE_YEARS",
        1827: "FIVE_YEARS", 2192: "SIX_YEARS", 2557: "SEVEN_YEARS", 2922: "EIGHT_YEARS", 3288: "NINE_YEARS",
        3653: "TEN_YEARS",
    }[days]


_COLON = ArnFormat.COLON_RESOURCE_NAME
