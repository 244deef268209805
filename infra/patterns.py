"""One construct per pattern: secure bucket, S3 -> SNS fan-out topic, consumer queue, Spark application,
EMR job role, alarm topic, consumer monitoring (alarms on the job's metrics and a dashboard).

Each construct is safe by default (SSL-only, encrypted, no public access) and writes its IAM
statements out in full, so the synthesized policies read the same as what is reviewed.
"""
from __future__ import annotations

import hashlib
from typing import Sequence

import jsii
from aws_cdk import Acknowledgment, ArnFormat, Aws, Duration, RemovalPolicy, Stack, Tags, Validations
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_emrserverless as emrs
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from s3sqs.job import metrics as job_metrics

from infra.config import AlarmConfig, ConsumerConfig, ConsumerGrant, EmrConfig, EventFilterConfig
from infra import contract
from infra.contract import POLICY_OWNER_TAG, QUEUE_CONSUME_ACTIONS, alarm_name, dashboard_name, queue_name

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
        self.topic = sns.Topic(self, "Topic", topic_name=topic_name, master_key=encryption_key)
        deny_insecure_transport(self.topic)
        mark_policy_owned(self.topic)
        from_source_bucket = {"ArnLike": {"aws:SourceArn": source_bucket.bucket_arn},
                              "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}}
        self.topic.add_to_resource_policy(service_may(
            "AllowSourceBucketPublish", "s3", ["sns:Publish"], [self.topic.topic_arn], from_source_bucket))
        # S3 encrypts what it publishes to the topic with the topic's key.
        encryption_key.add_to_resource_policy(service_may(
            "AllowSourceBucketNotifications", "s3", KEY_USE, ["*"], from_source_bucket))
        if key_encrypts_queues:
            # SNS encrypts what it delivers to the consumer queues, which this key encrypts too.
            encryption_key.add_to_resource_policy(service_may(
                "AllowFanOutTopicDelivery", "sns", KEY_USE, ["*"],
                {"ArnEquals": {"aws:SourceArn": stack.format_arn(service="sns", resource=topic_name)}}))
        policy = self.topic.node.find_child("Policy")
        key_filter = s3.NotificationKeyFilter(
            prefix=event_filter.prefix or None, suffix=event_filter.suffix or None
        )
        filters = [key_filter] if (event_filter.prefix or event_filter.suffix) else []
        source_bucket.add_event_notification(
            s3.EventType.OBJECT_CREATED, _TopicDestination(self.topic, policy), *filters
        )


KEY_USE = ["kms:GenerateDataKey*", "kms:Decrypt"]

# Every action a topic policy can name: CDK's enforce_ssl denies plain HTTP to sns:Publish alone.
TOPIC_ACTIONS = ["sns:AddPermission", "sns:DeleteTopic", "sns:GetDataProtectionPolicy", "sns:GetTopicAttributes",
                 "sns:ListSubscriptionsByTopic", "sns:ListTagsForResource", "sns:Publish",
                 "sns:PutDataProtectionPolicy", "sns:RemovePermission", "sns:SetTopicAttributes", "sns:Subscribe"]


def insecure_transport_denial(actions: list[str], resources: list[str], sid: str = "DenyInsecureTransport"):
    """Refuse every request over plain HTTP, whoever makes it (infra.contract's statement, as CDK's)."""
    return iam.PolicyStatement.from_json(contract.insecure_transport_denial(sid, actions, resources))


def deny_insecure_transport(topic: sns.Topic) -> None:
    topic.add_to_resource_policy(insecure_transport_denial(TOPIC_ACTIONS, [topic.topic_arn]))


def key_use(key: kms.IKey, sid: str, actions: list[str], service: str, context_key: str, arns: list[str]):
    """Use of the stack key through one service, for the named resources only: KMS hands AWS services the
    resource's ARN as encryption context (a bucket's with S3 Bucket Keys, else its objects'; a queue's)."""
    # String operators: KMS types encryption context values as strings (parliament flags Arn operators there).
    return iam.PolicyStatement(sid=sid, actions=actions, resources=[key.key_arn], conditions={
        "StringEquals": {"kms:ViaService": f"{service}.{Aws.REGION}.amazonaws.com"},
        "StringLike": {f"kms:EncryptionContext:{context_key}": arns}})


def key_use_through_s3(key: kms.IKey, sid: str, buckets: Sequence[s3.IBucket], actions=("kms:Decrypt",
                       "kms:GenerateDataKey")) -> iam.PolicyStatement:
    return key_use(key, sid, list(actions), "s3", "aws:s3:arn",
                   [a for b in buckets for a in (b.bucket_arn, f"{b.bucket_arn}/*")])


def key_use_through_sqs(key: kms.IKey, sid: str, queue_arns: Sequence[str], actions=("kms:Decrypt",)):
    return key_use(key, sid, list(actions), "sqs", "aws:sqs:arn", list(queue_arns))


def service_may(sid: str, service: str, actions: list[str], resources: list[str], conditions: dict):
    """A resource-policy statement that lets an AWS service (s3, sns) act, on the conditions given."""
    return iam.PolicyStatement(sid=sid, principals=[iam.ServicePrincipal(f"{service}.amazonaws.com")],
                               actions=actions, resources=resources, conditions=conditions)


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
        alarm_action: cloudwatch.IAlarmAction,
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
        self.queue.add_to_resource_policy(service_may(
            "AllowFanOutTopic", "sns", ["sqs:SendMessage"], [self.queue.queue_arn],
            {"ArnEquals": {"aws:SourceArn": topic.topic_arn}}))
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
        if grant.principals:  # none for a consumer of the deploying account: only its job role reads
            self._grant_consumer(grant, encryption_key, queue_arn, consumer)

        period = Duration.seconds(alarms.period_seconds)
        self.dlq_alarm = reaches_alarm(
            self, "DlqMessagesAlarm", alarms, alarm_action,
            name=alarm_name(stack.stack_name, consumer.name, "dlq-messages"),
            description=f"Messages for consumer {consumer.name} reached its dead-letter queue: "
                        f"redrive-dlq inspect --consumer {consumer.name}",
            metric=self.dlq.metric_approximate_number_of_messages_visible(period=period, statistic="Maximum"),
            threshold=alarms.dlq_messages_threshold,
        )
        # SQS's own age of the oldest message: the job cannot see it (no queue attribute carries it).
        self.age_alarm = reaches_alarm(
            self, "OldestMessageAgeAlarm", alarms, alarm_action,
            name=alarm_name(stack.stack_name, consumer.name, "oldest-message-age"),
            description=f"Consumer {consumer.name} is falling behind, or its job is down: its oldest message is "
                        "too old",
            metric=self.queue.metric_approximate_age_of_oldest_message(period=period, statistic="Maximum"),
            threshold=alarms.oldest_message_age_seconds,
        )

    def _grant_consumer(self, grant: ConsumerGrant, encryption_key: kms.IKey | None, queue_arn: str,
                        consumer: ConsumerConfig) -> None:
        """The consumer's principals may consume the queue (and decrypt it, through SQS only)."""
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


def reaches_alarm(
    scope: Construct, id: str, alarms: AlarmConfig, action: cloudwatch.IAlarmAction, *, name: str, description: str,
    metric: cloudwatch.IMetric, threshold: int,
) -> cloudwatch.Alarm:
    """Alarm once the metric reaches the threshold, and notify when it does and when it clears. Missing data is
    no breach: SQS stops publishing metrics for a queue that has been idle for hours, and the job publishes
    only while it runs batches."""
    alarm = cloudwatch.Alarm(
        scope,
        id,
        alarm_name=name,
        alarm_description=description,
        metric=metric,
        threshold=threshold,
        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluation_periods=alarms.evaluation_periods,
        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
    )
    alarm.add_alarm_action(action)
    alarm.add_ok_action(action)
    return alarm


class AlarmTopic(Construct):
    """The SNS topic every alarm of the stack notifies, with optional e-mail subscriptions.

    SSL-only and under a customer-managed key: CloudWatch cannot publish to a topic under the AWS-managed SNS
    key. Only this stack's alarms (by the name prefix every one of them has, in this account) may publish,
    and use the key for that.
    """

    def __init__(self, scope: Construct, id: str, *, encryption_key: kms.IKey, emails: Sequence[str]) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        self.topic = sns.Topic(self, "Topic", display_name=f"{stack.stack_name} alarms", master_key=encryption_key)
        deny_insecure_transport(self.topic)
        mark_policy_owned(self.topic)
        from_stack_alarms = {
            "ArnLike": {"aws:SourceArn": stack.format_arn(service="cloudwatch", resource="alarm",
                                                          resource_name=alarm_name(stack.stack_name, "*"),
                                                          arn_format=_COLON)},
            "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
        }
        cloudwatch_service = iam.ServicePrincipal("cloudwatch.amazonaws.com")
        self.topic.add_to_resource_policy(iam.PolicyStatement(
            sid="AllowStackAlarms", principals=[cloudwatch_service], actions=["sns:Publish"],
            resources=[self.topic.topic_arn], conditions=from_stack_alarms))
        encryption_key.add_to_resource_policy(iam.PolicyStatement(
            sid="AllowStackAlarmsToNotify", principals=[cloudwatch_service],
            actions=["kms:Decrypt", "kms:GenerateDataKey*"], resources=["*"], conditions=from_stack_alarms))
        for email in emails:
            # Named after the address, not its place in the list: adding or removing one address leaves the
            # others' confirmed subscriptions alone.
            sns.Subscription(self, f"Email{_short_hash(email.lower())}", topic=self.topic,
                             protocol=sns.SubscriptionProtocol.EMAIL, endpoint=email)
        self.action = cloudwatch_actions.SnsAction(self.topic)


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:10].upper()


def _object_arn(bucket: s3.IBucket, pattern: str) -> str:
    return bucket.arn_for_objects(pattern)


def list_statement(sid: str, bucket: s3.IBucket, *prefixes: str) -> iam.PolicyStatement:
    """ListBucket on `bucket` below each of `prefixes` ("" is the whole bucket)."""
    condition = None if "" in prefixes else {"StringLike": {"s3:prefix": [f"{p}*" for p in prefixes]}}
    return iam.PolicyStatement(sid=sid, actions=["s3:ListBucket"], resources=[bucket.bucket_arn],
                               conditions=condition)


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
            # Folder prefixes end in "/": "checkpoints/ingest*" would also list "checkpoints/ingest-v2/".
            list_statement("ListCheckpointAndOutput", checkpoint_bucket, checkpoint_prefix, output_prefix),
            # What backfills list (includeExistingFiles, backfillInterval); also what makes S3 answer a read of a
            # key deleted before the job reads it with 404 rather than 403.
            list_statement("ListSourcePrefix", source_bucket, read_prefix),
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
                resources=[_object_arn(source_bucket, p) for p in dict.fromkeys(read_patterns)],
            ),
            iam.PolicyStatement(
                sid="ReadCommitMarkers",
                actions=["s3:GetObject"],
                resources=[_object_arn(checkpoint_bucket, f"{p}*") for p in marker_prefixes],
            ),
            iam.PolicyStatement(
                sid="KeepCleaningJournal",
                actions=["s3:GetObject", "s3:PutObject"],
                resources=[_object_arn(checkpoint_bucket, f"{journal_prefix}*")],
            ),
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
        # Assumed by the stack's scheduled function, and by the roles cdk.json names for source-state clean --apply
        # (sourceCleaning.operatorRoles): not by every principal of the account that may call sts:AssumeRole.
        trusted: list[iam.IPrincipal] = [iam.ServicePrincipal("lambda.amazonaws.com")] if scheduled else []
        if operator_roles:
            trusted.append(iam.AccountRootPrincipal().with_conditions({"ArnLike": {"aws:PrincipalArn": [
                f"arn:{Aws.PARTITION}:iam::{Aws.ACCOUNT_ID}:role/{name}" for name in operator_roles]}}))
        self.role = iam.Role(
            self, "Role",
            description=f"The only role of {stack.stack_name} that may delete from the source bucket "
                        "(source-state clean)",
            assumed_by=iam.CompositePrincipal(*trusted),
            inline_policies={"SourceCleaning": iam.PolicyDocument(statements=statements)},
        )
        acknowledge_wildcards(self, self.role, statements)


def acknowledge_wildcards(scope: Construct, role: Construct, statements: Sequence[iam.PolicyStatement]) -> None:
    """Accept cdk-nag's IAM5 finding on each wildcard resource of a statement whose Sid has a reason, on the role
    or managed policy that holds the statements."""
    for statement in statements:
        reason = _WILDCARD_REASONS.get(statement.sid)
        for resource in statement.resources:
            if reason and "*" in nag_resource_text(scope, resource):
                acknowledge(role, f"AwsSolutions-IAM5[Resource::{nag_resource_text(scope, resource)}]", reason)


class ScheduledCleaner(Construct):
    """The source cleaner on a schedule: a function that runs one cleaning run (s3sqs.cleaning.scheduled) as the
    cleaner role, started by an EventBridge rule. One run at a time (reserved concurrency 1); a run stops a
    minute before the function's 15-minute limit and the next takes up the rest. A failed run alarms."""

    def __init__(self, scope: Construct, id: str, *, role: iam.Role, schedule: str, config: dict, code_dir: str,
                 log_group_name: str, retention_days: int, encryption_key: kms.IKey | None, alarms: AlarmConfig,
                 alarm_action: cloudwatch.IAlarmAction, alarm_name: str) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        # Named, so that the stack key's policy can let CloudWatch Logs encrypt it (the key names its groups).
        log_group = logs.LogGroup(self, "Logs", log_group_name=log_group_name,
                                  retention=logs.RetentionDays(_retention_enum(retention_days)),
                                  encryption_key=encryption_key, removal_policy=RemovalPolicy.RETAIN)
        self.function = lambda_.Function(
            self, "Function",
            description=f"Archives or deletes source files of {stack.stack_name} that every consumer has committed",
            runtime=lambda_.Runtime.PYTHON_3_14, architecture=lambda_.Architecture.ARM_64,
            handler="s3sqs.cleaning.scheduled.handler",
            # The connector's own package: the cleaner needs only boto3 of what it imports, which Lambda has.
            code=lambda_.Code.from_asset(code_dir, exclude=["**/__pycache__", "*.egg-info", "**/*.pyc"]),
            role=role, timeout=Duration.minutes(15), memory_size=512, reserved_concurrent_executions=1,
            environment={"S3SQS_CLEANER": stack.to_json_string(config)}, log_group=log_group,
        )
        log_group.grant_write(role)
        events.Rule(self, "Schedule", description=f"Runs {stack.stack_name}'s source cleaner",
                    schedule=events.Schedule.expression(schedule),
                    targets=[events_targets.LambdaFunction(self.function, retry_attempts=2)])
        self.failures = reaches_alarm(
            self, "FailuresAlarm", alarms, alarm_action, name=alarm_name,
            description="A scheduled run of the source cleaner failed: see the function's log group",
            metric=self.function.metric_errors(period=Duration.seconds(alarms.period_seconds)), threshold=1,
        )


# What pyiceberg's Glue catalog calls to create and commit a table. CreateDatabase too: it is called to
# make sure the database exists (and answers AlreadyExists when it does).
ICEBERG_GLUE_ACTIONS = ["glue:CreateDatabase", "glue:CreateTable", "glue:GetDatabase", "glue:GetTable",
                        "glue:UpdateTable"]


def glue_tables(stack: Stack, databases: Sequence[str]) -> list[str]:
    """The ARNs a Glue table operation is authorized on, for the tables of `databases`: the catalog, each
    database, its tables."""
    def glue_arn(resource: str, name: str | None = None) -> str:
        return stack.format_arn(service="glue", resource=resource, resource_name=name)
    return [glue_arn("catalog"), *(a for db in dict.fromkeys(databases)
                                   for a in (glue_arn("database", db), glue_arn("table", f"{db}/*")))]


def iceberg_glue_statement(stack: Stack, database: str) -> iam.PolicyStatement:
    """The job's Iceberg tables in one Glue database, and nothing else of the Data Catalog."""
    return iam.PolicyStatement(sid="UseIcebergGlueDatabase", actions=ICEBERG_GLUE_ACTIONS,
                               resources=glue_tables(stack, [database]))


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
    "CleanSourceObjects": "The cleaner deletes committed files by key; limited to the prefixes (and notified "
                          "suffix) the stack's consumers read.",
    "ReadCommitMarkers": "Each consumer writes one marker object per commit; limited to the markers' folder "
                         "below each consumer's checkpoint.",
    "KeepCleaningJournal": "The cleaner writes one journal object per chunk of cleaned files; limited to its "
                           "own journal prefix.",
    "WriteArchive": "Archived files keep their keys below the archive prefix; limited to that prefix.",
    # The operators' managed policy (OperatorPolicy).
    "UploadJobArtifacts": "submit-job uploads each consumer's code under content-addressed keys below jobs/.",
    "WatchJobRuns": "Job run ids are made per run; limited to the stack's one application.",
    "ReadJobLogs": "Log stream names are made per run; limited to the consumers' own log groups.",
    "ReadSourceState": "source-state reads every consumer's state files below checkpoints/.",
    "CompactTables": "compact-table rewrites the data files of the consumers' tables below output/.",
    "CompactIcebergTables": "compact-table commits to the consumers' Iceberg tables by name, in their own databases.",
}


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
        # EMR Serverless counts job runs that ended FAILED in AWS/EMRServerless `FailedJobs`, per minute and per
        # application (the consumers' jobs share this one). From release 7.10, and so on emr-spark-8.0.0, it
        # publishes it with ApplicationName and JobName dimensions beside ApplicationId and stops updating the
        # ApplicationId-only series. An alarm on a plain metric must name its exact dimension set, and a wrong
        # guess never fires, so this is a Metrics Insights query: the largest FailedJobs of any series of this
        # application, whichever dimensions EMR adds.
        self.failed_jobs = cloudwatch.MathExpression(
            expression=f"SELECT MAX(FailedJobs) FROM \"AWS/EMRServerless\" "
                       f"WHERE ApplicationId = '{self.application.attr_application_id}'",
            using_metrics={}, label="failed job runs (application)", period=Duration.minutes(5),
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


class ConsumerMonitoring(Construct):
    """One consumer's alarms on what its job reports (quarantined files, failed queries) and its dashboard.

    The job writes its per-batch figures as CloudWatch embedded metric format lines to its log group
    (s3sqs.job.metrics), under the consumer's queue name: the dimension SQS's own metrics use too.
    """

    def __init__(self, scope: Construct, id: str, *, consumer: ConsumerConfig, queue: ConsumerQueue,
                 alarms: AlarmConfig, alarm_action: cloudwatch.IAlarmAction, failed_jobs: cloudwatch.MathExpression,
                 failed_jobs_alarm: cloudwatch.IAlarm) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        period = Duration.seconds(alarms.period_seconds)
        dims = {job_metrics.DIMENSION: queue.queue.queue_name}

        def job(name: str, statistic: str = "Sum", label: str | None = None) -> cloudwatch.Metric:
            return cloudwatch.Metric(namespace=job_metrics.NAMESPACE, metric_name=name, dimensions_map=dims,
                                     statistic=statistic, period=period, label=label)

        self.quarantine_alarm = reaches_alarm(
            self, "QuarantinedFilesAlarm", alarms, alarm_action,
            name=alarm_name(stack.stack_name, consumer.name, "quarantined-files"),
            description=f"The job of consumer {consumer.name} set files aside that it could not read: "
                        f"source-state files --consumer {consumer.name} --status quarantined",
            metric=job(job_metrics.QUARANTINED), threshold=alarms.quarantined_files_threshold,
        )
        self.failure_alarm = reaches_alarm(
            self, "QueryFailuresAlarm", alarms, alarm_action,
            name=alarm_name(stack.stack_name, consumer.name, "query-failures"),
            description=f"The streaming query of consumer {consumer.name} failed (a STREAMING run retries it): see "
                        "its log group, or job-runs list",
            metric=job(job_metrics.QUERY_FAILURES), threshold=1,
        )
        sqs_max = {"period": period, "statistic": "Maximum"}
        q, dlq = queue.queue, queue.dlq
        self.dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=dashboard_name(stack.stack_name, consumer.name),
            default_interval=Duration.hours(6),
            widgets=[
                [cloudwatch.TextWidget(width=24, height=2, markdown=(
                    f"**Consumer {consumer.name}**: its job's figures come from the EMF lines it logs after each "
                    f"batch. What a batch held, file by file: `source-state files --consumer "
                    f"{consumer.name} --batch N`; one file: `source-state lookup --consumer "
                    f"{consumer.name} KEY`."))],
                [cloudwatch.AlarmStatusWidget(
                    title=f"Alarms of consumer {consumer.name}", width=24, height=3,
                    alarms=[queue.age_alarm, queue.dlq_alarm, self.quarantine_alarm, self.failure_alarm,
                            failed_jobs_alarm])],
                [_graph("Queue backlog", [
                    q.metric_approximate_number_of_messages_visible(label="visible", **sqs_max),
                    q.metric_approximate_number_of_messages_not_visible(label="in flight", **sqs_max),
                    job(job_metrics.FILES_PENDING, "Maximum", "files recorded, not planned")]),
                 _graph("Age of the oldest message (s)", [
                     q.metric_approximate_age_of_oldest_message(label="oldest message", **sqs_max)],
                     threshold=alarms.oldest_message_age_seconds),
                 _graph("Dead-letter queue", [
                     dlq.metric_approximate_number_of_messages_visible(label="messages", **sqs_max)],
                     threshold=alarms.dlq_messages_threshold)],
                [_graph("Files and rows in", [job(job_metrics.FILES_IN, label="files"),
                                              job(job_metrics.ROWS_IN, label="rows")]),
                 _graph("Bytes in", [job(job_metrics.BYTES_IN, label="bytes")]),
                 _graph("Skipped by the source", [job(job_metrics.DUPLICATES, label="duplicates"),
                                                  job(job_metrics.FILTERED, label="filtered"),
                                                  job(job_metrics.UNPARSEABLE, label="unparseable messages")])],
                [_graph("Not read cleanly", [job(job_metrics.QUARANTINED, label="quarantined files"),
                                             job(job_metrics.MISSING, label="missing files"),
                                             job(job_metrics.MALFORMED, label="malformed rows"),
                                             job(job_metrics.NEW_COLUMNS, label="files with new columns")],
                        threshold=alarms.quarantined_files_threshold),
                 _graph("Source and batch time (ms)", [job(job_metrics.PLANNING_TIME, label="planning"),
                                                       job(job_metrics.SNAPSHOT_TIME, label="snapshots"),
                                                       job(job_metrics.BATCH_TIME, "Maximum", "longest batch")]),
                 _graph("Failures", [job(job_metrics.QUERY_FAILURES, label=f"{consumer.name} query failures"),
                                     failed_jobs.with_(period=period)])],
            ],
        )


def _graph(title: str, metrics: list[cloudwatch.IMetric], threshold: int | None = None) -> cloudwatch.GraphWidget:
    annotations = [cloudwatch.HorizontalAnnotation(value=threshold, label="alarm")] if threshold else None
    return cloudwatch.GraphWidget(title=title, left=metrics, width=8, height=6, left_annotations=annotations)
