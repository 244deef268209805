"""Every policy of every deploy shape through two linters a security reviewer runs: cloudsplaining (least
privilege: nothing unconstrained, no escalation or exfiltration paths) and parliament (well-formed, no
actions and resources that do not match). What they report, each accepted here with its reason, or a failure.

Linted: the stack's roles (job roles, the source cleaner's), the operators' managed policy, the role policy
onboard-account prints for a consumer's own role, and the bucket, queue, topic and key policies. Not linted:
CDK's own bucket-notifications handler, whose role the local stand-in does not create (cdk-nag acknowledges it).
"""
from __future__ import annotations

import json

import pytest
from cloudsplaining.scan.policy_document import PolicyDocument
from parliament import analyze_policy_string

from tests.iam.contract import external_readers, operator
from tests.iam.shapes import SHAPES

# cloudsplaining's findings of actions that support no resource type: "*" is the only resource they take.
UNRESTRICTABLE = {"logs:DescribeLogGroups": "EMR Serverless finds the job's log group; the action has no resource type"}
# parliament's findings (its community auditors included) accepted: (issue, the policy it may occur in) -> why.
ACCEPTED = {
    ("PERMISSIONS_MANAGEMENT_ACTIONS", "OperatorPolicy"):
        "iam:PassRole on the consumers' job roles only, to emr-serverless only: submit-job starts runs as them",
    ("CREDENTIALS_EXPOSURE", "OperatorPolicy"):
        "sts:AssumeRole on the stack's source cleaner role only: source-state clean --apply runs as it",
    ("RESOURCE_STAR", "key"): "in a key policy, Resource \"*\" means this key: the only form KMS takes",
    ("PERMISSIONS_MANAGEMENT_ACTIONS", "key"):
        "the statement CDK gives every key, administration to the account root: IAM policies decide who administers",
}


def identity_policies(w, shape) -> dict[str, dict]:
    out = {}
    for arn, role in w.roles.items():
        for i, doc in enumerate(role["identity"]):
            out[f"{arn} #{i}"] = doc
    out["OperatorPolicy"] = operator(w).identity[0]
    for reader in external_readers(w, shape):
        out[f"{reader.name} (onboard-account's role policy)"] = reader.identity[0]
    return out


def resource_policies(w) -> dict[str, tuple[str, dict]]:
    kinds = {"s3": "bucket", "sqs": "queue", "sns": "topic", "kms": "key"}
    return {arn: (kinds[arn.split(":")[2]], doc) for arn, doc in w.resource_policies.items()}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_cloudsplaining_reports_nothing(shape, worlds):
    w = worlds[shape]
    found = []
    for name, doc in identity_policies(w, SHAPES[shape]).items():
        pd = PolicyDocument(doc)
        unconstrained = set(pd.all_allowed_unrestricted_actions) - set(UNRESTRICTABLE)
        for what, actions in (("privilege escalation", pd.allows_privilege_escalation),
                              ("data exfiltration", pd.allows_data_exfiltration_actions),
                              ("credentials exposure", pd.credentials_exposure),
                              ("unconstrained (Resource \"*\")", sorted(unconstrained)),
                              ("service-wide wildcard", pd.service_wildcard),
                              ("NotAction", [True] if pd.contains_statement_using_not_action else [])):
            if actions:
                found.append(f"  {name}: {what}: {actions}")
        # data exfiltration lists s3:GetObject & co. only when unconstrained; checked above with the rest.
    assert not found, f"cloudsplaining in {shape}:\n" + "\n".join(found)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_parliament_reports_nothing_beyond_the_accepted(shape, worlds):
    w = worlds[shape]
    found = []
    policies = [(name, name, doc) for name, doc in identity_policies(w, SHAPES[shape]).items()]
    policies += [(kind, f"{kind} {arn}", doc) for arn, (kind, doc) in resource_policies(w).items()]
    for kind, name, doc in policies:
        for f in analyze_policy_string(json.dumps(doc), include_community_auditors=True).findings:
            if (f.issue, kind) not in ACCEPTED:
                found.append(f"  {name}: {f.issue} {f.detail}")
    assert not found, f"parliament in {shape}:\n" + "\n".join(found)
