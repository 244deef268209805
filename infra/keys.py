"""The stack's KMS keys: one customer-managed key for all it encrypts, or, in the AWS-managed mode, one key for the
topics alone."""
from __future__ import annotations

from aws_cdk import Aws, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms

from infra.config import StackConfig
from infra.contract import cleaner_log_group_name, log_group_name
from infra.policies import mark_policy_owned


def stack_keys(stack: Stack, config: StackConfig) -> tuple[kms.Key | None, kms.Key]:
    """The stack's customer-managed key (None in the AWS-managed mode), and the key of its topics."""
    if not config.kms.customer_managed:
        # S3 cannot publish to a topic under the AWS-managed SNS key (nor CloudWatch to the alarm topic), so
        # the topics get a key of their own, the only customer-managed key of this mode.
        topic_key = _rotating_key(stack, "TopicKey", "Encrypts the fan-out and alarm topics (S3 and CloudWatch "
                                                     "cannot publish under the AWS-managed SNS key)")
        return None, topic_key
    key = _rotating_key(stack, "Key", "Encrypts the fan-out and alarm topics, consumer queues, checkpoints, "
                                      "artifacts and job logs")
    # CloudWatch Logs encrypts the stack's log groups with this key, and only those: the names are
    # fixed, so the key policy names each group without a reference. (No kms:Describe*: a DescribeKey
    # request carries no encryption context, so under this condition it could never be allowed.)
    key.add_to_resource_policy(
        iam.PolicyStatement(
            sid="AllowCloudWatchLogs",
            principals=[iam.ServicePrincipal(f"logs.{Aws.REGION}.amazonaws.com")],
            actions=["kms:Encrypt*", "kms:Decrypt*", "kms:ReEncrypt*", "kms:GenerateDataKey*"],
            resources=["*"],
            conditions={"StringEquals": {"kms:EncryptionContext:aws:logs:arn": [
                f"arn:{Aws.PARTITION}:logs:{Aws.REGION}:{Aws.ACCOUNT_ID}:log-group:{name}"
                for name in _encrypted_log_groups(stack, config)
            ]}},
        )
    )
    return key, key


def _rotating_key(stack: Stack, id: str, description: str) -> kms.Key:
    key = kms.Key(stack, id, description=description, enable_key_rotation=True, removal_policy=RemovalPolicy.RETAIN)
    mark_policy_owned(key)
    return key


def _encrypted_log_groups(stack: Stack, config: StackConfig) -> list[str]:
    """Every log group the stack key encrypts: the consumers' and, when it runs on a schedule, the cleaner's."""
    names = [log_group_name(stack.stack_name, c.name) for c in config.consumers]
    if config.source_cleaning.enabled and config.cleaning_schedule is not None:
        names.append(cleaner_log_group_name(stack.stack_name))
    return names
