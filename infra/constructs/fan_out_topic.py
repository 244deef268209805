"""The SNS topic a bucket's ObjectCreated events fan out through."""
from __future__ import annotations

import jsii
from aws_cdk import Aws, Stack
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.config import EventFilterConfig
from infra.policies import KEY_USE, deny_insecure_transport, mark_policy_owned, service_may


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
