"""What the stack promises its operators: the facts that the CDK app and the operator tools both rely on.

The stack grants its job roles exactly these prefixes and actions, and the operator tools build paths,
requests and policies from them; both import them from here, so they cannot drift apart. No aws_cdk
import: ops/ reads this without starting jsii.
"""
from __future__ import annotations

import re
from typing import Sequence

from s3sqs.core.layout import state_location

# Who may be granted: the rules cdk.json's consumers and onboard-account's flags both check.
ACCOUNT_ID_RE = re.compile(r"^[0-9]{12}\Z")
ORG_ID_RE = re.compile(r"^o-[a-z0-9]{10,32}\Z")
# An aws:PrincipalArn pattern for an account grant: roles of one account, wildcards allowed. Not users: a user
# carries long-term keys, and the stack's named principals (crossAccountPrincipals) are roles for that reason.
PRINCIPAL_PATTERN_RE = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):iam::(?P<account>[0-9]{12}):role/[A-Za-z0-9_+=,.@/*?-]{1,512}\Z")


def principal_pattern_problem(pattern: str, account: str) -> str | None:
    """Why `pattern` may not narrow a grant to `account` (None: it may). cdk.json's accountAccess and
    onboard-account's --principal-arn-like both ask this."""
    m = PRINCIPAL_PATTERN_RE.match(pattern)
    if m and m.group("account") == account:
        return None
    if re.match(r"^arn:aws[a-z-]*:iam::[0-9]{12}:user/", pattern):
        return (f"{pattern!r} is a user pattern; allowed: roles only (a user carries long-term keys), such as "
                f"'arn:aws:iam::{account}:role/ingest-*'")
    return (f"{pattern!r} is not allowed; allowed: an IAM role ARN pattern in account {account}, such as "
            f"'arn:aws:iam::{account}:role/ingest-*'")


def key_prefix_problem(prefix: str) -> str | None:
    """Why a key prefix may not scope a grant (None: it may). Grants match keys by prefix, so 'analytics' also
    grants 'analytics-private/...'; a folder prefix ends in '/'. '' is the whole bucket, said on purpose."""
    if prefix == "" or prefix.endswith("/"):
        return None
    return (f"{prefix!r} also covers every key that merely starts with it, such as {prefix + '-private/'!r}; "
            f"allowed: a prefix ending in '/', such as {prefix + '/'!r}, or '' for the whole bucket")


def account_grant_conditions(principal_arn_like, principal_org_id) -> dict:
    """The IAM conditions that narrow a grant to a whole account: principal ARN patterns, an organization."""
    out: dict = {}
    if principal_arn_like:
        out["ArnLike"] = {"aws:PrincipalArn": list(principal_arn_like)}
    if principal_org_id:
        out["StringEquals"] = {"aws:PrincipalOrgID": principal_org_id}
    return out


def with_conditions(statement_conditions: dict, extra: dict) -> dict:
    """Merge two IAM condition blocks (operator -> key -> value): a grant's conditions join a statement's own and
    never replace them."""
    out = {op: dict(keys) for op, keys in statement_conditions.items()}
    for op, keys in extra.items():
        for k, v in keys.items():
            if k in out.get(op, {}):
                raise ValueError(f"condition {op} {k} set twice")
            out.setdefault(op, {})[k] = v
    return out


# Use of a KMS key through an AWS service, for named resources only: KMS hands the service's requests the
# resource's ARN as encryption context (a queue's; a bucket's with S3 Bucket Keys, else its objects'). The stack
# writes these into its roles' and the key's policies, onboarding into another account's key grant.
def key_use_through(service: str, region: str, context_arns: Sequence[str]) -> dict:
    """The conditions of a key use through `service` (s3, sqs) for the resources whose ARNs match `context_arns`.
    String operators: KMS types encryption context values as strings (parliament flags Arn operators there)."""
    return {"StringEquals": {"kms:ViaService": f"{service}.{region}.amazonaws.com"},
            "StringLike": {f"kms:EncryptionContext:aws:{service}:arn": list(context_arns)}}


def bucket_key_contexts(bucket_arns: Sequence[str]) -> list[str]:
    """The encryption contexts S3 hands KMS for a bucket's objects: the bucket's ARN (Bucket Keys) or an object's."""
    return [a for b in bucket_arns for a in (b, f"{b}/*")]


def key_use_through_queue(region: str, queue_arn: str) -> dict:
    """The conditions of another account's kms:Decrypt of one consumer queue's messages: through SQS, for that
    queue only. The stack grants it to a consumer's principals, onboarding to the account it onboards."""
    return {"StringEquals": {"kms:ViaService": f"sqs.{region}.amazonaws.com",
                             "kms:EncryptionContext:aws:sqs:arn": queue_arn}}


# What another account's consumer does with the stack key: decrypt, through SQS (its messages) and S3 (its
# objects). No kms:DescribeKey: a DescribeKey request carries no encryption context, so under the conditions
# above it never applies, and the connector does not call it.
CONSUMER_KEY_ACTIONS = ("kms:Decrypt",)


def insecure_transport_denial(sid: str, actions, resources) -> dict:
    """The statement that refuses every request over plain HTTP, whoever makes it: on the stack's topics and an
    imported bucket's published statements, and what onboarding adds to a bucket policy without one."""
    return {"Sid": sid, "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": actions, "Resource": resources,
            "Condition": {"Bool": {"aws:SecureTransport": "false"}}}


def commit_markers_location(checkpoint_uri: str) -> str:
    """The state location whose markers the cleaner reads, from a consumer's checkpointUri."""
    return state_location(checkpoint_uri)


# Names the stack fixes rather than leaves to CloudFormation, so that key policies and the dead-letter
# queue's RedriveAllowPolicy can name these resources without a reference (which would be a cycle).
def queue_name(stack_name: str, consumer: str) -> str:
    """A consumer's queue (its dead-letter queue keeps a generated name)."""
    return f"{stack_name}-{consumer}"


def log_group_name(stack_name: str, consumer: str) -> str:
    """A consumer's CloudWatch Logs group for its EMR job runs."""
    return f"/s3sqs/{stack_name}/{consumer}"


def cleaner_log_group_name(stack_name: str) -> str:
    """The scheduled source cleaner's log group. Fixed, like the consumers': a customer key's policy can let
    CloudWatch Logs use the key only for groups it names. '_' is no consumer name's, so the two never meet."""
    return f"/s3sqs/{stack_name}/_source-cleaner"


def alarm_name(stack_name: str, *parts: str) -> str:
    """Every alarm of the stack starts with its name, so the alarm topic can let exactly these alarms publish."""
    return "-".join((stack_name, *parts))


def dashboard_name(stack_name: str, consumer: str) -> str:
    """A consumer's CloudWatch dashboard."""
    return f"{stack_name}-{consumer}"


# The stack tags every resource whose resource policy is part of its template (source bucket when it
# creates it, queues, topic, keys) with this key and the stack's name. Onboarding reads it: a policy the
# template owns is put back by the next deploy that updates it, so writing there needs --force.
POLICY_OWNER_TAG = "s3sqs:policy-owner"


# A consumer name becomes part of resource names, output keys and S3 prefixes.
CONSUMER_NAME_RE = re.compile(r"^(?:[a-z][a-z0-9-]{0,30}[a-z0-9]|[a-z])\Z")
CONSUMER_NAME_RULE = (
    "1-32 characters, lower-case letters, digits and '-', starting with a letter and not ending with '-'"
)

# What reading a consumer queue takes: the stack grants these to each consumer's principals and job
# role, and onboarding grants them to another account.
QUEUE_CONSUME_ACTIONS = (
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
)

# Receives before a message moves to the consumer's dead-letter queue, unless cdk.json says otherwise.
DEFAULT_MAX_RECEIVE_COUNT = 5
