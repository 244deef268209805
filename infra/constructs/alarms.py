"""Every alarm of the stack, and the topic they all notify.

Each alarm fires once its metric reaches a threshold and notifies when it does and when it clears; every name
starts with the stack's (infra.contract.alarm_name), which is how the alarm topic lets exactly these publish.
"""
from __future__ import annotations

import hashlib
from typing import NamedTuple, Sequence

from aws_cdk import Aws, ArnFormat, Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from s3sqs.job import metrics as job_metrics

from infra.config import AlarmConfig, ConsumerConfig
from infra.contract import alarm_name
from infra.policies import deny_insecure_transport, mark_policy_owned


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
                                                          arn_format=ArnFormat.COLON_RESOURCE_NAME)},
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


def failed_job_runs_alarm(stack: Stack, alarms: AlarmConfig, action: cloudwatch.IAlarmAction,
                          failed_jobs: cloudwatch.MathExpression) -> cloudwatch.Alarm:
    """Any job run of the EMR Serverless application that failed (SparkApplication.failed_jobs)."""
    return reaches_alarm(
        stack, "FailedJobRunsAlarm", alarms, action, name=alarm_name(stack.stack_name, "failed-job-runs"),
        description="A job run on the EMR Serverless application failed: job-runs list --state FAILED",
        metric=failed_jobs.with_(period=Duration.seconds(alarms.period_seconds)), threshold=1,
    )


def _consumer_alarm(scope: Construct, consumer: ConsumerConfig, kind: str, alarms: AlarmConfig,
                    action: cloudwatch.IAlarmAction, metric: cloudwatch.IMetric, threshold: int,
                    description: str) -> cloudwatch.Alarm:
    """One consumer's alarm of one kind ("dlq-messages"), made as "DlqMessagesAlarm" in `scope`."""
    construct_id = "".join(word.capitalize() for word in kind.split("-")) + "Alarm"
    stack_name = Stack.of(scope).stack_name
    return reaches_alarm(scope, construct_id, alarms, action, name=alarm_name(stack_name, consumer.name, kind),
                         description=description, metric=metric, threshold=threshold)


class QueueAlarms(NamedTuple):
    """The alarms on one consumer's queues, in the order they are made."""

    dlq_messages: cloudwatch.Alarm
    oldest_message_age: cloudwatch.Alarm


def queue_alarms(scope: Construct, consumer: ConsumerConfig, queue: sqs.IQueue, dlq: sqs.IQueue,
                 alarms: AlarmConfig, action: cloudwatch.IAlarmAction) -> QueueAlarms:
    """On SQS's own metrics of one consumer's queues: messages in its DLQ, and the age of its oldest message
    (the job cannot see that one: no queue attribute carries it)."""
    largest = {"period": Duration.seconds(alarms.period_seconds), "statistic": "Maximum"}
    name = consumer.name
    return QueueAlarms(
        _consumer_alarm(scope, consumer, "dlq-messages", alarms, action,
                        dlq.metric_approximate_number_of_messages_visible(**largest), alarms.dlq_messages_threshold,
                        f"Messages for consumer {name} reached its dead-letter queue: "
                        f"redrive-dlq inspect --consumer {name}"),
        _consumer_alarm(scope, consumer, "oldest-message-age", alarms, action,
                        queue.metric_approximate_age_of_oldest_message(**largest), alarms.oldest_message_age_seconds,
                        f"Consumer {name} is falling behind, or its job is down: its oldest message is too old"),
    )


def job_metric(queue_name: str, name: str, period: Duration, statistic: str = "Sum",
               label: str | None = None) -> cloudwatch.Metric:
    """One of the figures a consumer's job logs after each batch (s3sqs.job.metrics), under its queue's name."""
    return cloudwatch.Metric(namespace=job_metrics.NAMESPACE, metric_name=name,
                             dimensions_map={job_metrics.DIMENSION: queue_name},
                             statistic=statistic, period=period, label=label)


def job_alarms(scope: Construct, consumer: ConsumerConfig, queue_name: str, alarms: AlarmConfig,
               action: cloudwatch.IAlarmAction) -> list[cloudwatch.Alarm]:
    """On what one consumer's job reports: files it set aside, malformed rows in the files it read, and its
    streaming query's failures."""
    period, name = Duration.seconds(alarms.period_seconds), consumer.name
    quarantined = job_metric(queue_name, job_metrics.QUARANTINED, period)
    malformed = job_metric(queue_name, job_metrics.MALFORMED, period)
    failures = job_metric(queue_name, job_metrics.QUERY_FAILURES, period)
    return [
        _consumer_alarm(scope, consumer, "quarantined-files", alarms, action, quarantined,
                        alarms.quarantined_files_threshold,
                        f"The job of consumer {name} set files aside that it could not read: "
                        f"source-state files --consumer {name} --status quarantined"),
        _consumer_alarm(scope, consumer, "malformed-rows", alarms, action, malformed,
                        alarms.malformed_rows_threshold,
                        f"The job of consumer {name} read rows that did not fit the schema (kept with nulls, "
                        f"or dropped under DROPMALFORMED): source-state files --consumer {name} --status "
                        "malformed_rows, then source-state lookup for a file's first reason"),
        _consumer_alarm(scope, consumer, "query-failures", alarms, action, failures, 1,
                        f"The streaming query of consumer {name} failed (a STREAMING run retries it): see its log "
                        "group, or job-runs list"),
    ]


def cleaner_failures_alarm(scope: Construct, function: lambda_.IFunction, alarms: AlarmConfig,
                           action: cloudwatch.IAlarmAction) -> cloudwatch.Alarm:
    """A failed run of the scheduled source cleaner."""
    return reaches_alarm(
        scope, "FailuresAlarm", alarms, action, name=alarm_name(Stack.of(scope).stack_name, "source-cleaner-failures"),
        description="A scheduled run of the source cleaner failed: see the function's log group",
        metric=function.metric_errors(period=Duration.seconds(alarms.period_seconds)), threshold=1,
    )
