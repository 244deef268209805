"""What the stack promises its operators: the facts that the CDK app and the operator tools both rely on.

The stack grants its job roles exactly these prefixes and actions, and the operator tools build paths,
requests and policies from them; both import them from here, so they cannot drift apart. No aws_cdk
import: ops/ reads this without starting jsii.
"""
from __future__ import annotations

import re

# Checkpoint bucket: each consumer's job keeps its checkpoint under checkpoints/<consumer>/ and
# writes its table under output/<consumer>/; its role may write nowhere else there.
CHECKPOINTS_PREFIX = "checkpoints/"
OUTPUT_PREFIX = "output/"
# Artifacts bucket: submit-job uploads job code and packed environments under jobs/ (content-addressed),
# and EMR Serverless writes job logs under emr-logs/, the only place there a job role may write.
JOB_ARTIFACTS_PREFIX = "jobs/"
EMR_LOGS_PREFIX = "emr-logs/"


def checkpoint_prefix(consumer: str) -> str:
    return f"{CHECKPOINTS_PREFIX}{consumer}/"


def output_prefix(consumer: str) -> str:
    return f"{OUTPUT_PREFIX}{consumer}/"


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
