"""The stack's CloudWatch Logs groups: fixed names, a retention from cdk.json, kept when the stack goes."""
from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

# cdk.json's logRetentionDays -> CDK's name for it (the values CloudWatch Logs accepts).
_RETENTION = {
    1: "ONE_DAY", 3: "THREE_DAYS", 5: "FIVE_DAYS", 7: "ONE_WEEK", 14: "TWO_WEEKS", 30: "ONE_MONTH",
    60: "TWO_MONTHS", 90: "THREE_MONTHS", 120: "FOUR_MONTHS", 150: "FIVE_MONTHS", 180: "SIX_MONTHS",
    365: "ONE_YEAR", 400: "THIRTEEN_MONTHS", 545: "EIGHTEEN_MONTHS", 731: "TWO_YEARS", 1096: "THREE_YEARS",
    1827: "FIVE_YEARS", 2192: "SIX_YEARS", 2557: "SEVEN_YEARS", 2922: "EIGHT_YEARS", 3288: "NINE_YEARS",
    3653: "TEN_YEARS",
}


def retained_log_group(scope: Construct, id: str, *, name: str, retention_days: int,
                       encryption_key: kms.IKey | None) -> logs.LogGroup:
    """A named log group (a customer key's policy can let CloudWatch Logs use the key only for groups it names)."""
    return logs.LogGroup(
        scope,
        id,
        log_group_name=name,
        retention=logs.RetentionDays(_RETENTION[retention_days]),
        encryption_key=encryption_key,
        removal_policy=RemovalPolicy.RETAIN,
    )
