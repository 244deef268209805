"""One consumer's part of the stack: its queues and their alarms, its dashboard, and its job's log group and role."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import CfnOutput
from aws_cdk import aws_logs as logs

from infra.config import ConsumerConfig
from infra.constructs.alarms import queue_alarms
from infra.constructs.consumer_monitoring import ConsumerMonitoring
from infra.constructs.consumer_queue import ConsumerQueue
from infra.constructs.job_role import JobRole
from infra.contract import log_group_name
from s3sqs.core.layout import checkpoint_prefix, emr_logs_prefix, job_artifacts_prefix, output_prefix
from infra.log_groups import retained_log_group

if TYPE_CHECKING:
    from infra.stack import StreamingStack


@dataclass(frozen=True)
class ConsumerWiring:
    """What the stack made for one consumer."""
    consumer: ConsumerConfig
    queue: ConsumerQueue
    role: JobRole
    log_group: logs.LogGroup


def wire_consumer(stack: StreamingStack, consumer: ConsumerConfig) -> ConsumerWiring:
    """Make one consumer's resources, below the stack's fan-out topic and on its Spark application."""
    cfg, cid, action = stack.config, consumer.construct_id, stack.alarm_topic.action
    queue = ConsumerQueue(stack, f"Consumer{cid}", consumer=consumer, topic=stack.topic,
                          grant=cfg.grant_for(consumer), encryption_key=stack.key)
    ConsumerMonitoring(
        stack, f"Monitoring{cid}", consumer=consumer, queue=queue,
        queue_alarms=queue_alarms(queue, consumer, queue.queue, queue.dlq, cfg.alarms, action),
        alarms=cfg.alarms, alarm_action=action, failed_jobs=stack.spark.failed_jobs,
        failed_jobs_alarm=stack.failed_jobs_alarm,
    )
    log_group = retained_log_group(stack, f"JobLogs{cid}", name=log_group_name(stack.stack_name, consumer.name),
                                   retention_days=cfg.emr.log_retention_days, encryption_key=stack.key)
    role = JobRole(
        stack, f"JobRole{cid}", consumer=consumer, application_arn=stack.application.attr_arn,
        source_bucket=stack.source_bucket, read_pattern=cfg.read_pattern(consumer),
        read_prefix=cfg.read_prefix(consumer), checkpoint_bucket=stack.checkpoint_bucket,
        checkpoint_prefix=checkpoint_prefix(consumer.name), output_prefix=output_prefix(consumer.name),
        artifacts_bucket=stack.artifacts_bucket, artifacts_prefix=job_artifacts_prefix(consumer.name),
        monitoring_prefix=emr_logs_prefix(consumer.name),
        queue=queue.queue, encryption_key=stack.key, log_group_name=log_group.log_group_name,
    )
    CfnOutput(stack, f"{cid}QueueUrl", value=queue.queue.queue_url, description=f"Queue of consumer {consumer.name}")
    CfnOutput(stack, f"{cid}DlqUrl", value=queue.dlq.queue_url,
              description=f"Dead-letter queue of consumer {consumer.name}")
    return ConsumerWiring(consumer, queue, role, log_group)
