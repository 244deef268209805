"""One consumer's queue and dead-letter queue, subscribed to the fan-out topic."""
from __future__ import annotations

from aws_cdk import Aws, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.config import ConsumerConfig, ConsumerGrant
from infra.contract import (
    CONSUMER_KEY_ACTIONS, QUEUE_CONSUME_ACTIONS, key_use_through_queue, queue_name, with_conditions,
)
from infra.nag import acknowledge
from infra.policies import mark_policy_owned, service_may

# Consumers drain within minutes; four days covers a long weekend outage.
QUEUE_RETENTION = Duration.days(4)
# The maximum SQS allows: a DLQ must outlive its source queue so nothing expires before redrive.
DLQ_RETENTION = Duration.days(14)


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
    """One consumer's queue and DLQ, subscribed to the fan-out topic, with its access policy."""

    def __init__(self, scope: Construct, id: str, *, consumer: ConsumerConfig, topic: sns.ITopic,
                 grant: ConsumerGrant, encryption_key: kms.IKey | None) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        name = queue_name(stack.stack_name, consumer.name)
        # Built from the fixed name: the DLQ and the key policy may name the queue without a reference.
        queue_arn = stack.format_arn(service="sqs", resource=name)
        # SSL-only and encrypted, both of them.
        protected = {"enforce_ssl": True, "encryption_master_key": encryption_key,
                     "encryption": sqs.QueueEncryption.KMS if encryption_key else sqs.QueueEncryption.SQS_MANAGED}
        self.dlq = sqs.Queue(
            self, "DeadLetterQueue", **protected, retention_period=DLQ_RETENTION,
            # Only this consumer's queue may move messages here.
            redrive_allow_policy=sqs.RedriveAllowPolicy(
                redrive_permission=sqs.RedrivePermission.BY_QUEUE,
                source_queues=[sqs.Queue.from_queue_arn(self, "SourceQueueRef", queue_arn)],
            ),
            # What failed stays for inspection and redrive even when the stack is deleted.
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.queue = sqs.Queue(
            self, "Queue", queue_name=name, **protected, retention_period=QUEUE_RETENTION,
            visibility_timeout=Duration.seconds(consumer.visibility_timeout_seconds),
            # Long polling by default keeps empty receives (and their cost) down.
            receive_message_wait_time=Duration.seconds(20),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dlq, max_receive_count=consumer.max_receive_count),
        )
        acknowledge(self.dlq, "AwsSolutions-SQS3", "This queue is itself the dead-letter queue of the consumer queue.")
        mark_policy_owned(self.queue)
        mark_policy_owned(self.dlq)
        self._subscribe(topic, consumer)
        if grant.principals:  # none for a consumer of the deploying account: only its job role reads
            self._grant_consumer(grant, encryption_key, queue_arn, consumer)

    def _subscribe(self, topic: sns.ITopic, consumer: ConsumerConfig) -> None:
        # Written out rather than SqsSubscription: that one would also grant SNS on the key with a
        # reference to the topic, and with one key for both that is a dependency cycle.
        self.queue.add_to_resource_policy(service_may(
            "AllowFanOutTopic", "sns", ["sqs:SendMessage"], [self.queue.queue_arn],
            {"ArnEquals": {"aws:SourceArn": topic.topic_arn}}))
        self.subscription = sns.Subscription(
            self, "Subscription", topic=topic, endpoint=self.queue.queue_arn, protocol=sns.SubscriptionProtocol.SQS,
            # The connector reads S3 events directly; no SNS envelope to unwrap.
            raw_message_delivery=True,
            filter_policy_with_message_body=prefix_filter_policy(consumer.prefix) if consumer.prefix else None,
        )
        # SNS must be allowed to send before the subscription starts delivering.
        self.subscription.node.add_dependency(self.queue.node.find_child("Policy"))

    def _grant_consumer(self, grant: ConsumerGrant, encryption_key: kms.IKey | None, queue_arn: str,
                        consumer: ConsumerConfig) -> None:
        """The consumer's principals may consume the queue (and decrypt it, through SQS only): the grants
        onboard-account makes for an account the stack does not list, in the same words."""
        principals = [iam.ArnPrincipal(p) for p in grant.principals]
        self.queue.add_to_resource_policy(iam.PolicyStatement(
            sid="AllowConsumerAccount", principals=principals, actions=list(QUEUE_CONSUME_ACTIONS),
            resources=[self.queue.queue_arn], conditions=grant.conditions or None))
        if encryption_key is not None:
            encryption_key.add_to_resource_policy(iam.PolicyStatement(
                sid=f"AllowConsumer{consumer.construct_id}Decrypt", principals=principals,
                actions=list(CONSUMER_KEY_ACTIONS), resources=["*"],
                conditions=with_conditions(key_use_through_queue(Aws.REGION, queue_arn), grant.conditions)))
