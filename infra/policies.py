"""The IAM statements several constructs write: key use through a service, listing below prefixes, Glue tables,
an AWS service's resource-policy grant and the plain-HTTP denial; and the tag on a resource whose policy the
template holds."""
from __future__ import annotations

from typing import Sequence

from aws_cdk import Aws, Stack, Tags
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra import contract
from infra.contract import POLICY_OWNER_TAG

# What S3 and SNS need of the topics' key to publish and deliver.
KEY_USE = ["kms:GenerateDataKey*", "kms:Decrypt"]

# Every action a topic policy can name: CDK's enforce_ssl denies plain HTTP to sns:Publish alone.
TOPIC_ACTIONS = ["sns:AddPermission", "sns:DeleteTopic", "sns:GetDataProtectionPolicy", "sns:GetTopicAttributes",
                 "sns:ListSubscriptionsByTopic", "sns:ListTagsForResource", "sns:Publish",
                 "sns:PutDataProtectionPolicy", "sns:RemovePermission", "sns:SetTopicAttributes", "sns:Subscribe"]


def mark_policy_owned(construct: Construct) -> None:
    """Tag a resource whose resource policy is part of this template, so onboarding knows a deploy may put it back."""
    Tags.of(construct).add(POLICY_OWNER_TAG, Stack.of(construct).stack_name)


def insecure_transport_denial(actions: list[str], resources: list[str], sid: str = "DenyInsecureTransport"):
    """Refuse every request over plain HTTP, whoever makes it (infra.contract's statement, as CDK's)."""
    return iam.PolicyStatement.from_json(contract.insecure_transport_denial(sid, actions, resources))


def deny_insecure_transport(topic: sns.Topic) -> None:
    topic.add_to_resource_policy(insecure_transport_denial(TOPIC_ACTIONS, [topic.topic_arn]))


def key_use(key: kms.IKey, sid: str, actions: list[str], service: str, context_arns: list[str]):
    """Use of the stack key through one service, for the named resources only (infra.contract.key_use_through)."""
    return iam.PolicyStatement(sid=sid, actions=actions, resources=[key.key_arn],
                               conditions=contract.key_use_through(service, Aws.REGION, context_arns))


def key_use_through_s3(key: kms.IKey, sid: str, buckets: Sequence[s3.IBucket], actions=("kms:Decrypt",
                       "kms:GenerateDataKey")) -> iam.PolicyStatement:
    return key_use(key, sid, list(actions), "s3", contract.bucket_key_contexts([b.bucket_arn for b in buckets]))


def key_use_through_sqs(key: kms.IKey, sid: str, queue_arns: Sequence[str], actions=("kms:Decrypt",)):
    return key_use(key, sid, list(actions), "sqs", list(queue_arns))


def service_may(sid: str, service: str, actions: list[str], resources: list[str], conditions: dict):
    """A resource-policy statement that lets an AWS service (s3, sns) act, on the conditions given."""
    return iam.PolicyStatement(sid=sid, principals=[iam.ServicePrincipal(f"{service}.amazonaws.com")],
                               actions=actions, resources=resources, conditions=conditions)


def list_statement(sid: str, bucket: s3.IBucket, *prefixes: str) -> iam.PolicyStatement:
    """ListBucket on `bucket` below each of `prefixes` ("" is the whole bucket)."""
    condition = None if "" in prefixes else {"StringLike": {"s3:prefix": [f"{p}*" for p in prefixes]}}
    return iam.PolicyStatement(sid=sid, actions=["s3:ListBucket"], resources=[bucket.bucket_arn],
                               conditions=condition)


def glue_tables(stack: Stack, databases: Sequence[str]) -> list[str]:
    """The ARNs a Glue table operation is authorized on, for the tables of `databases`: the catalog, each
    database, its tables."""
    def glue_arn(resource: str, name: str | None = None) -> str:
        return stack.format_arn(service="glue", resource=resource, resource_name=name)
    return [glue_arn("catalog"), *(a for db in dict.fromkeys(databases)
                                   for a in (glue_arn("database", db), glue_arn("table", f"{db}/*")))]
