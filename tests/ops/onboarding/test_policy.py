"""Pure statement building, merge-by-Sid, revoke and diff: no AWS."""
import copy
import json
import re

import pytest

from infra.contract import QUEUE_CONSUME_ACTIONS
from ops.onboarding import policy as pm

ACCT = "111111111111"
ROLE = f"arn:aws:iam::{ACCT}:role/analytics-job"

FOREIGN = {
    "Version": "2012-10-17",
    "Id": "keep-my-id",
    "Statement": [
        {"Sid": "TeamB", "Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::333333333333:root"},
         "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::bkt/b/*"},
        # No Sid at all: must survive everything.
        {"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": "arn:aws:s3:::bkt/*",
         "Condition": {"Bool": {"aws:SecureTransport": "false"}}},
        # Looks like ours but belongs to another consumer account.
        {"Sid": "S3SqsOnboard444444444444AcctSqsConsume", "Effect": "Allow",
         "Principal": {"AWS": "444444444444"}, "Action": "sqs:ReceiveMessage", "Resource": "*"},
    ],
}


PATTERN = f"arn:aws:iam::{ACCT}:role/analytics-*"


def acct() -> pm.Grantee:
    return pm.Grantee.for_account(ACCT, principal_arn_like=[PATTERN])


@pytest.mark.parametrize("bad", ["", "12345", "1234567890123", "12345678901a", "１２３４５６７８９０１２", "111111111111\n", None])
def test_account_id_must_be_12_digits(bad):
    with pytest.raises(pm.PolicyError, match="--consumer-account.*12 digits"):
        pm.Grantee.for_account(bad)


@pytest.mark.parametrize("bad", ["arn:aws:iam::1111:role/x", "arn:aws:iam::111111111111:user/x", "role/x",
                                 "arn:aws:sts::111111111111:assumed-role/x/y"])
def test_role_arn_is_validated(bad):
    with pytest.raises(pm.PolicyError, match="--consumer-role-arn"):
        pm.Grantee.for_role(bad)


@pytest.mark.parametrize("kwargs, match", [
    ({}, "would grant every principal of the account"),
    ({"principal_arn_like": ["arn:aws:iam::222222222222:role/x"]}, "pattern in account 111111111111"),
    ({"principal_arn_like": ["*"]}, "--principal-arn-like"),
    ({"principal_org_id": "org"}, "--principal-org-id 'org'"),
])
def test_an_account_is_granted_only_under_a_valid_condition(kwargs, match):
    with pytest.raises(pm.PolicyError, match=match):
        pm.Grantee.for_account(ACCT, **kwargs)


def test_account_conditions_go_into_every_statement():
    g = pm.Grantee.for_account(ACCT, principal_arn_like=[PATTERN], principal_org_id="o-a1b2c3d4e5")
    for stmt in [*pm.bucket_statements(g, "bkt", ["a/"]), pm.queue_statement(g, "arn:aws:sqs:us-east-1:2:q"),
                 *pm.kms_statements(g, "us-east-1", queue_arn="arn:aws:sqs:us-east-1:2:q",
                                    bucket_arns=["arn:aws:s3:::bkt"])]:
        assert stmt["Condition"]["ArnLike"]["aws:PrincipalArn"] == [PATTERN], stmt["Sid"]
        assert stmt["Condition"]["StringEquals"]["aws:PrincipalOrgID"] == "o-a1b2c3d4e5", stmt["Sid"]
    assert "Condition" not in pm.queue_statement(pm.Grantee.for_role(ROLE), "arn:aws:sqs:us-east-1:2:q")


def test_role_grantee_takes_account_and_partition_from_arn():
    g = pm.Grantee.for_role("arn:aws-cn:iam::111111111111:role/path/job")
    assert (g.account, g.partition, g.principal) == (ACCT, "aws-cn", "arn:aws-cn:iam::111111111111:role/path/job")


def test_sid_namespaces_do_not_overlap():
    a, r = acct(), pm.Grantee.for_role(ROLE)
    other_role = pm.Grantee.for_role(f"arn:aws:iam::{ACCT}:role/other")
    names = [a.sid_namespace, r.sid_namespace, other_role.sid_namespace]
    assert len(set(names)) == 3
    for x in names:
        assert re.fullmatch(r"[A-Za-z0-9]+", x)  # IAM allows only alphanumerics in Sids
        for y in names:
            assert x == y or not y.startswith(x)


def test_bucket_statements_grant_only_get_object_under_each_prefix():
    stmts = pm.bucket_statements(acct(), "bkt", ["landing/a/", "landing/b/"])
    # No s3:ListBucket: the connector reads only the keys its queue announces.
    assert [s["Action"] for s in stmts] == ["s3:GetObject", "s3:GetObject"]
    assert sorted(s["Resource"] for s in stmts) == ["arn:aws:s3:::bkt/landing/a/*", "arn:aws:s3:::bkt/landing/b/*"]
    assert all(s["Principal"] == {"AWS": f"arn:aws:iam::{ACCT}:root"} for s in stmts)
    assert len({s["Sid"] for s in stmts}) == 2
    # Deterministic: the same input gives the same Sids on every run.
    assert [s["Sid"] for s in stmts] == [s["Sid"] for s in pm.bucket_statements(acct(), "bkt", ["landing/a/", "landing/b/"])]


def test_merge_keeps_foreign_statements_untouched_and_appends_ours():
    before = copy.deepcopy(FOREIGN)
    desired = pm.bucket_statements(acct(), "bkt", ["a/"])
    after = pm.merge_statements(before, desired)
    assert before == FOREIGN  # input not mutated
    assert after["Statement"][:3] == FOREIGN["Statement"]
    assert after["Statement"][3:] == desired
    assert after["Id"] == "keep-my-id"


def test_second_merge_is_a_no_op():
    text = json.dumps(FOREIGN)
    desired = pm.bucket_statements(acct(), "bkt", ["a/"])
    first = pm.plan_grant(text, desired, "p")
    assert first.changed
    second = pm.plan_grant(json.dumps(first.after), desired, "p")
    assert not second.changed
    assert second.after == first.after


def test_statement_as_aws_normalises_it_still_counts_as_present():
    desired = [pm.queue_statement(acct(), "arn:aws:sqs:us-east-1:222222222222:q")]
    stored = copy.deepcopy(desired[0])
    stored["Principal"] = {"AWS": ACCT}  # AWS may show a bare account id
    stored["Action"] = list(reversed(stored["Action"]))
    stored["Resource"] = [stored["Resource"]]
    plan = pm.plan_grant(json.dumps({"Version": "2012-10-17", "Statement": [stored]}), desired, "p")
    assert not plan.changed


def test_changed_own_statement_is_replaced_in_place():
    old = pm.queue_statement(acct(), "arn:aws:sqs:us-east-1:222222222222:old")
    doc = copy.deepcopy(FOREIGN)
    doc["Statement"].insert(1, old)
    new = pm.queue_statement(acct(), "arn:aws:sqs:us-east-1:222222222222:q")
    after = pm.merge_statements(doc, [new])
    assert after["Statement"][1] == new
    assert [s for i, s in enumerate(after["Statement"]) if i != 1] == FOREIGN["Statement"]
    # ... and the plan names it as a conflict, which the command line refuses without --force.
    plan = pm.plan_grant(json.dumps(doc), [new], "queue policy of q")
    assert plan.conflicts == (new["Sid"],)
    (why,) = pm.refusals(plan, "queue policy of q", revoke=False, policy_owner=None)
    assert new["Sid"] in why and "--force" in why
    assert pm.refusals(plan, "queue policy of q", revoke=True, policy_owner=None) == []


def test_a_template_owned_policy_is_refused_for_grants_only():
    plan = pm.plan_grant(json.dumps(FOREIGN), [pm.queue_statement(acct(), "arn:aws:sqs:us-east-1:2:q")], "p")
    assert plan.conflicts == ()
    (why,) = pm.refusals(plan, "queue policy of q", revoke=False, policy_owner="S3SqsStreaming")
    assert "stack S3SqsStreaming" in why and "cdk.json entry" in why and "--force" in why
    unchanged = pm.plan_grant(json.dumps(plan.after), [pm.queue_statement(acct(), "arn:aws:sqs:us-east-1:2:q")], "p")
    assert pm.refusals(unchanged, "q", revoke=False, policy_owner="S3SqsStreaming") == []


def test_grant_drops_the_list_bucket_statements_of_earlier_versions():
    legacy = {"Sid": next(iter(pm.legacy_bucket_sids(acct(), ["a/"]))), "Effect": "Allow",
              "Principal": {"AWS": f"arn:aws:iam::{ACCT}:root"}, "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::bkt"}
    doc = copy.deepcopy(FOREIGN)
    doc["Statement"].append(legacy)
    plan = pm.plan_grant(json.dumps(doc), pm.bucket_statements(acct(), "bkt", ["a/"]), "p",
                         obsolete=pm.legacy_bucket_sids(acct(), ["a/"]).__contains__)
    assert legacy["Sid"] not in {s.get("Sid") for s in plan.after["Statement"]}
    assert plan.after["Statement"][:3] == FOREIGN["Statement"]
    assert pm.bucket_sid_matcher(acct(), ["a/"])(legacy["Sid"])  # a revoke takes it too


def test_revoke_removes_only_this_grantees_statements():
    a, r = acct(), pm.Grantee.for_role(ROLE)
    doc = pm.merge_statements(FOREIGN, pm.bucket_statements(a, "bkt", ["a/", "b/"]))
    doc = pm.merge_statements(doc, pm.bucket_statements(r, "bkt", ["a/"]))
    plan = pm.plan_revoke(json.dumps(doc), pm.bucket_sid_matcher(a, ["a/"]), "p")
    remaining = {s.get("Sid") for s in plan.after["Statement"]}
    assert {s["Sid"] for s in pm.bucket_statements(a, "bkt", ["b/"])} <= remaining
    assert {s["Sid"] for s in pm.bucket_statements(r, "bkt", ["a/"])} <= remaining
    assert not {s["Sid"] for s in pm.bucket_statements(a, "bkt", ["a/"])} & remaining
    # Without prefixes: every prefix of this grantee goes, the role's and foreign ones stay.
    plan = pm.plan_revoke(json.dumps(doc), pm.bucket_sid_matcher(a, None), "p")
    assert plan.after["Statement"][:3] == FOREIGN["Statement"]
    assert [s["Sid"] for s in plan.after["Statement"][3:]] == [s["Sid"] for s in pm.bucket_statements(r, "bkt", ["a/"])]


def test_revoke_of_grant_restores_the_original_document():
    desired = pm.bucket_statements(acct(), "bkt", ["a/"])
    granted = pm.plan_grant(json.dumps(FOREIGN), desired, "p").after
    revoked = pm.plan_revoke(json.dumps(granted), pm.bucket_sid_matcher(acct(), ["a/"]), "p")
    assert revoked.after == FOREIGN
    again = pm.plan_revoke(json.dumps(revoked.after), pm.bucket_sid_matcher(acct(), ["a/"]), "p")
    assert not again.changed


def test_revoke_leaving_nothing_means_delete_the_policy():
    desired = pm.bucket_statements(acct(), "bkt", ["a/"])
    granted = pm.plan_grant(None, desired, "p")
    assert granted.before is None and granted.changed
    plan = pm.plan_revoke(json.dumps(granted.after), pm.bucket_sid_matcher(acct(), None), "p")
    assert plan.after is None and plan.changed
    assert not pm.plan_revoke(None, pm.bucket_sid_matcher(acct(), None), "p").changed


@pytest.mark.parametrize("text,match", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not an object"),
    ('{"Statement": "nope"}', "not a list of objects"),
    ('{"Statement": [1]}', "not a list of objects"),
])
def test_malformed_existing_policy_is_refused(text, match):
    with pytest.raises(pm.PolicyError, match=match):
        pm.plan_grant(text, pm.bucket_statements(acct(), "bkt", ["a/"]), "bucket policy of s3://bkt")
    with pytest.raises(pm.PolicyError, match="refusing to overwrite"):
        pm.plan_revoke(text, pm.bucket_sid_matcher(acct(), None), "bucket policy of s3://bkt")


def test_duplicate_own_sid_is_refused():
    stmt = pm.queue_statement(acct(), "arn:aws:sqs:us-east-1:222222222222:q")
    doc = {"Statement": [stmt, stmt]}
    with pytest.raises(pm.PolicyError, match="two statements with Sid"):
        pm.merge_statements(doc, [stmt], "queue policy")


def test_single_statement_object_is_accepted():
    doc = {"Version": "2012-10-17", "Statement": FOREIGN["Statement"][0]}
    after = pm.merge_statements(doc, [pm.queue_statement(acct(), "arn:aws:sqs:us-east-1:222222222222:q")])
    assert after["Statement"][0] == FOREIGN["Statement"][0] and len(after["Statement"]) == 2


def test_diff_shows_only_our_lines_as_added():
    desired = [pm.queue_statement(acct(), "arn:aws:sqs:us-east-1:222222222222:q")]
    plan = pm.plan_grant(json.dumps(FOREIGN), desired, "queue policy of q")
    diff = pm.policy_diff(plan.before, plan.after, "queue policy of q")
    added = [line for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert any(desired[0]["Sid"] in line for line in added)
    assert not any("TeamB" in line or "333333333333" in line for line in added + removed)
    assert diff.startswith("--- queue policy of q (current)")


def test_subscription_filters_on_the_prefixes_unless_one_is_the_whole_bucket():
    q = f"arn:aws:sqs:us-east-1:{ACCT}:mine"
    assert pm.subscription(q, ["a/", "b/"]) == {
        "Protocol": "sqs", "Endpoint": q, "RawMessageDelivery": "true", "FilterPolicyScope": "MessageBody",
        "FilterPolicy": {"Records": {"s3": {"object": {"key": [{"prefix": "a/"}, {"prefix": "b/"}]}}}}}
    assert "FilterPolicy" not in pm.subscription(q, ["a/", ""])


def test_kms_statements_pin_the_service_and_the_encryption_context():
    q = "arn:aws:sqs:eu-west-1:222222222222:q"
    sqs, s3 = pm.kms_statements(acct(), "eu-west-1", queue_arn=q, bucket_arns=["arn:aws:s3:::bkt"])
    assert sqs["Action"] == s3["Action"] == ["kms:Decrypt", "kms:DescribeKey"]
    assert sqs["Condition"]["StringEquals"] == {"kms:ViaService": "sqs.eu-west-1.amazonaws.com",
                                                "kms:EncryptionContext:aws:sqs:arn": q}
    assert s3["Condition"]["StringEquals"] == {"kms:ViaService": "s3.eu-west-1.amazonaws.com"}
    assert s3["Condition"]["ArnLike"]["kms:EncryptionContext:aws:s3:arn"] == ["arn:aws:s3:::bkt", "arn:aws:s3:::bkt/*"]
    # Nothing through S3 for a bucket the key does not encrypt, nothing at all in topic mode then.
    assert [x["Sid"] for x in pm.kms_statements(acct(), "eu-west-1", queue_arn=q, bucket_arns=[])] == [sqs["Sid"]]
    assert pm.kms_statements(acct(), "eu-west-1", queue_arn=None, bucket_arns=[]) == []
    assert all(pm.kms_sid_matcher(acct())(x["Sid"]) for x in (sqs, s3))


@pytest.mark.parametrize("rule, expected", [
    ({"SSEAlgorithm": "AES256"}, False),
    ({"SSEAlgorithm": "aws:kms"}, False),  # the AWS-managed key
    ({"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "arn:aws:kms:eu-west-1:2:key/k-1"}, True),
    ({"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "k-1"}, True),
    ({"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "alias/data"}, True),
    ({"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": "arn:aws:kms:eu-west-1:2:key/other"}, False),
])
def test_key_encrypts_bucket(rule, expected):
    config = {"Rules": [{"ApplyServerSideEncryptionByDefault": rule}]}
    assert pm.key_encrypts_bucket(config, "arn:aws:kms:eu-west-1:2:key/k-1", ["alias/data"]) is expected
    assert pm.key_encrypts_bucket(None, "arn:aws:kms:eu-west-1:2:key/k-1") is False


def test_consumer_role_policy_mirrors_the_grants():
    p = pm.consumer_role_policy(
        partition="aws", buckets=["bkt"], prefixes=["a/", "b/"], queue_arn="arn:aws:sqs:us-east-1:2:q",
        kms_key_arn="arn:aws:kms:us-east-1:222222222222:key/k",
    )
    by_sid = {s["Sid"]: s for s in p["Statement"]}
    assert set(by_sid) == {"ReadSourceObjects", "ConsumeSourceQueue", "DecryptSourceData"}
    assert by_sid["ReadSourceObjects"]["Resource"] == ["arn:aws:s3:::bkt/a/*", "arn:aws:s3:::bkt/b/*"]
    assert by_sid["ConsumeSourceQueue"]["Action"] == list(QUEUE_CONSUME_ACTIONS)
    assert "Principal" not in by_sid["DecryptSourceData"]  # identity policy: no principal
