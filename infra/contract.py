"""What the stack promises its operators: the facts that the CDK app and the operator tools both rely on.

The stack grants its job roles exactly these prefixes and actions, and the operator tools build paths,
requests and policies from them; both import them from here, so they cannot drift apart. No aws_cdk
import: ops/ reads this without starting jsii.
"""
from __future__ import annotations

import re

from s3sqs.core.layout import MARKER_DIR as _MARKER_DIR, STATE_DIR as _STATE_DIR

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


def insecure_transport_denial(sid: str, actions, resources) -> dict:
    """The statement that refuses every request over plain HTTP, whoever makes it: on the stack's topics and an
    imported bucket's published statements, and what onboarding adds to a bucket policy without one."""
    return {"Sid": sid, "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": actions, "Resource": resources,
            "Condition": {"Bool": {"aws:SecureTransport": "false"}}}


# Checkpoint bucket: each consumer's job keeps its checkpoint under checkpoints/<consumer>/ and
# writes its table under output/<consumer>/; its role may write nowhere else there.
CHECKPOINTS_PREFIX = "checkpoints/"
OUTPUT_PREFIX = "output/"
# Artifacts bucket: submit-job uploads each consumer's job code and packed environment under
# jobs/<consumer>/ (content-addressed), and EMR Serverless writes that consumer's job logs under
# emr-logs/<consumer>/. A job role reads only its own jobs/ prefix and writes only its own emr-logs/ prefix.
JOB_ARTIFACTS_PREFIX = "jobs/"
EMR_LOGS_PREFIX = "emr-logs/"


def checkpoint_prefix(consumer: str) -> str:
    return f"{CHECKPOINTS_PREFIX}{consumer}/"


# Where a consumer's job writes its commit markers (s3sqs.state.markers), below its checkpoint: the job's
# source state, then the markers' folder. The stack's source cleaner reads them there, and nothing else of it.
def commit_markers_prefix(consumer: str) -> str:
    return f"{checkpoint_prefix(consumer)}{_STATE_DIR}/{_MARKER_DIR}/"


def commit_markers_location(checkpoint_uri: str) -> str:
    """The state location whose markers the cleaner reads, from a consumer's checkpointUri."""
    return f"{checkpoint_uri.rstrip('/')}/{_STATE_DIR}"


# Checkpoint bucket: what the source cleaner did, file by file, with the time (s3sqs.cleaning.journal).
SOURCE_CLEANING_PREFIX = "source-cleaning/"


def output_prefix(consumer: str) -> str:
    return f"{OUTPUT_PREFIX}{consumer}/"


def job_artifacts_prefix(consumer: str) -> str:
    return f"{JOB_ARTIFACTS_PREFIX}{consumer}/"


def emr_logs_prefix(consumer: str) -> str:
    return f"{EMR_LOGS_PREFIX}{consumer}/"


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
