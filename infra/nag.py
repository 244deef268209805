"""The cdk-nag findings the stack accepts, each with the reason it is acceptable."""
from __future__ import annotations

from typing import Sequence

from aws_cdk import Acknowledgment, Stack, Validations
from aws_cdk import aws_iam as iam
from constructs import Construct


def acknowledge(construct: Construct, rule_id: str, reason: str) -> None:
    """Record a cdk-nag finding as accepted, with the reason it is acceptable."""
    Validations.of(construct).acknowledge(Acknowledgment(id=rule_id, reason=reason))


def acknowledge_wildcards(scope: Construct, role: Construct, statements: Sequence[iam.PolicyStatement]) -> None:
    """Accept cdk-nag's IAM5 finding on each wildcard resource of a statement whose Sid has a reason, on the role
    or managed policy that holds the statements."""
    for statement in statements:
        reason = WILDCARD_REASONS.get(statement.sid)
        for resource in statement.resources:
            if reason and "*" in nag_resource_text(scope, resource):
                acknowledge(role, f"AwsSolutions-IAM5[Resource::{nag_resource_text(scope, resource)}]", reason)


def nag_resource_text(scope: Construct, value: str) -> str:
    """Render an ARN the way cdk-nag names it in a finding: `<Logical.Attr>` for GetAtt, `<Id>` for Ref."""
    return _render(Stack.of(scope).resolve(value))


def _render(node: object) -> str:
    if isinstance(node, str):
        return node
    if isinstance(node, dict) and len(node) == 1:
        (fn, arg), = node.items()
        if fn == "Ref":
            return f"<{arg}>"
        if fn == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
        if fn == "Fn::Join":
            return arg[0].join(_render(part) for part in arg[1])
    raise ValueError(f"cannot render {node!r} as a cdk-nag resource name")


# Why each statement (by Sid) of the job roles, the source cleaner's role and the operators' policy may name
# wildcard resources.
WILDCARD_REASONS = {
    "ReadSourceObjects": "Object keys are not known in advance; access is limited to the consumer's key prefix "
                         "and the notified suffix (the notified part of the bucket for a consumer without one).",
    "ReadWriteCheckpointAndOutput": "Spark writes many checkpoint and output files; limited to this consumer's "
                                    "checkpoint and output prefixes.",
    "ReadJobArtifacts": "The job reads its entry point and packed environment, uploaded under content-addressed "
                        "keys below this consumer's artifacts prefix.",
    "WriteMonitoringLogs": "EMR Serverless writes job logs with the job role, under this consumer's log prefix.",
    "FindLogGroup": "DescribeLogGroups is a list action that supports no narrower resource.",
    "WriteJobLogs": "Log stream names are chosen per job run; limited to this consumer's own log group.",
    "UseIcebergGlueDatabase": "The job creates and commits its Iceberg tables by name; limited to the tables "
                              "of the consumer's own Glue database.",
    "CleanSourceObjects": "The cleaner deletes committed files by key; limited to the prefixes (and notified "
                          "suffix) the stack's consumers read.",
    "ReadCommitMarkers": "Each consumer writes one marker object per commit; limited to the markers' folder "
                         "below each consumer's checkpoint.",
    "KeepCleaningJournal": "The cleaner writes one journal object per chunk of cleaned files; limited to its "
                           "own journal prefix.",
    "WriteArchive": "Archived files keep their keys below the archive prefix; limited to that prefix.",
    # The operators' managed policy (OperatorPolicy).
    "UploadJobArtifacts": "submit-job uploads each consumer's code under content-addressed keys below jobs/.",
    "WatchJobRuns": "Job run ids are made per run; limited to the stack's one application.",
    "ReadJobLogs": "Log stream names are made per run; limited to the consumers' own log groups.",
    "ReadSourceState": "source-state reads every consumer's state files below checkpoints/.",
    "CompactTables": "compact-table rewrites the data files of the consumers' tables below output/.",
    "CompactIcebergTables": "compact-table commits to the consumers' Iceberg tables by name, in their own databases.",
}
