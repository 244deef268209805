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
    # Only a grant that changes a template's policy calls for the cdk.json entry, which the refusal then prints.
    assert pm.stack_owned(plan, revoke=False, policy_owner="S3SqsStreaming")
    assert not pm.stack_owned(plan, revoke=True, policy_owner="S3SqsStreaming")
    assert not pm.stack_owned(unchanged, revoke=False, policy_owner="S3SqsStreaming")
    assert not pm.stack_owned(plan, revoke=False, policy_owner=None)


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
    # Only Decrypt: a DescribeKey request carries no encryption context, so these conditions would never let it.
    assert sqs["Action"] == s3["Action"] == ["kms:Decrypt"]
    assert sqs["Condition"]["StringEquals"] == {"kms:ViaService": "sqs.eu-west-1.amazonaws.com",
                                                "kms:EncryptionContext:aws:sqs:arn": q}
    assert s3["Condition"]["StringEquals"] == {"kms:ViaService": "s3.eu-west-1.amazonaws.com"}
    assert s3["Condition"]["StringLike"]["kms:EncryptionContext:aws:s3:arn"] == ["arn:aws:s3:::bkt", "arn:aws:s3:::bkt/*"]
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


# ---------------------------------------------------------------- who may be granted, and which prefixes

def test_principal_arn_like_takes_role_patterns_only_with_cdk_json_s_rule():
    from infra.contract import principal_pattern_problem

    user = f"arn:aws:iam::{ACCT}:user/*"
    with pytest.raises(pm.PolicyError) as e:
        pm.Grantee.for_account(ACCT, principal_arn_like=[user])
    # The very rule and words cdk.json's accountAccess.principalArnLike gets, after the flag's name.
    assert str(e.value) == f"--principal-arn-like {principal_pattern_problem(user, ACCT)}"
    assert "user pattern; allowed: roles only" in str(e.value)
    # A revoke finds statements by Sid: it still takes the user pattern an earlier version granted with.
    assert pm.Grantee.for_account(ACCT, principal_arn_like=[user], require_conditions=False).account == ACCT
    # ... of this account only.
    with pytest.raises(pm.PolicyError, match=r"--principal-arn-like 'arn:aws:iam::222222222222:user/\*'"):
        pm.Grantee.for_account(ACCT, principal_arn_like=["arn:aws:iam::222222222222:user/*"], require_conditions=False)


def _request(*argv: str):
    from ops.onboarding import cli as ob_cli
    from ops.onboarding.request import build_request

    base = ["--consumer-role-arn", ROLE, "--bucket", "bkt", "--queue-url",
            "https://sqs.us-east-1.amazonaws.com/222222222222/q"]
    return build_request(ob_cli.parser().parse_args([*base, *argv]), "us-east-1")


def test_a_prefix_without_its_slash_is_refused_for_a_grant_but_revoked():
    from infra.contract import key_prefix_problem
    from ops.onboarding import OnboardError

    with pytest.raises(OnboardError) as e:
        _request("--prefix", "analytics")
    assert str(e.value) == f"--prefix {key_prefix_problem('analytics')}"
    assert "'analytics-private/'" in str(e.value) and "'analytics/'" in str(e.value)
    assert _request("--prefix", "analytics/").prefixes == ["analytics/"]
    assert _request("--prefix", "").prefixes == [""]  # the whole bucket, said on purpose
    # A revoke only removes: it finds the statements an earlier version granted for the slash-less prefix.
    revoke = _request("--prefix", "analytics", "--revoke")
    legacy = pm.bucket_statements(revoke.grantee, "bkt", ["analytics"])
    assert all(pm.bucket_sid_matcher(revoke.grantee, revoke.prefixes)(s["Sid"]) for s in legacy)


# ---------------------------------------------------------------- one queue, one consuming account

QUEUE = "arn:aws:sqs:us-east-1:222222222222:q"


def _queue_policy(*statements):
    return {"Version": "2012-10-17", "Statement": list(statements)}


def _allow(principal, action, sid="Other", **extra):
    return {"Sid": sid, "Effect": "Allow", "Principal": principal, "Action": action, "Resource": QUEUE, **extra}


@pytest.mark.parametrize("stmt, readers", [
    (_allow({"AWS": "arn:aws:iam::333333333333:root"}, ["sqs:ReceiveMessage", "sqs:DeleteMessage"]),
     ["333333333333"]),
    (_allow({"AWS": ["333333333333", "arn:aws:iam::444444444444:role/job"]}, "sqs:*"),
     ["333333333333", "444444444444"]),
    (_allow({"AWS": "arn:aws:iam::333333333333:root"}, "SQS:deletemessage"), ["333333333333"]),
    (_allow({"AWS": "arn:aws:iam::333333333333:root"}, "sqs:Receive*"), ["333333333333"]),
    (_allow({"AWS": "arn:aws:iam::333333333333:root"}, "*"), ["333333333333"]),
    (_allow("*", "sqs:ReceiveMessage"), ["*"]),  # everyone: pm.EVERYONE
    (_allow("*", "sqs:ReceiveMessage", Condition={"StringEquals": {"aws:PrincipalAccount": "333333333333"}}),
     ["333333333333"]),
    # Allow everything but sending: receiving included.
    ({"Sid": "Other", "Effect": "Allow", "Principal": {"AWS": "333333333333"}, "NotAction": "sqs:SendMessage",
      "Resource": QUEUE}, ["333333333333"]),
    # Not readers: a producer, a monitor that only reads attributes, a deny, a service.
    (_allow({"AWS": "arn:aws:iam::333333333333:root"}, "sqs:SendMessage"), []),
    (_allow({"AWS": "arn:aws:iam::333333333333:root"}, "sqs:GetQueueAttributes"), []),
    ({**_allow({"AWS": "arn:aws:iam::333333333333:root"}, "sqs:*"), "Effect": "Deny"}, []),
    (_allow({"Service": "sns.amazonaws.com"}, "sqs:SendMessage"), []),
])
def test_queue_readers_are_the_accounts_allowed_to_receive_or_delete(stmt, readers):
    assert sorted(pm.queue_readers(_queue_policy(stmt))) == readers


def test_other_queue_readers_leave_out_the_grantee_and_add_what_the_stack_declares():
    g = pm.Grantee.for_role(ROLE)
    doc = _queue_policy(
        _allow({"AWS": f"arn:aws:iam::{ACCT}:role/other-job"}, "sqs:ReceiveMessage", sid="SameAccount"),
        _allow({"AWS": "arn:aws:iam::333333333333:root"}, list(QUEUE_CONSUME_ACTIONS), sid="AllowConsumerAccount"),
        pm.queue_statement(pm.Grantee.for_account("444444444444", principal_arn_like=[
            "arn:aws:iam::444444444444:role/x-*"]), QUEUE),
    )
    readers = pm.other_queue_readers(doc, g, {"333333333333": "cdk.json's consumer 'analytics'",
                                             ACCT: "cdk.json's consumer 'mine'"})
    assert readers == {
        "333333333333": "queue policy statement AllowConsumerAccount; cdk.json's consumer 'analytics'",
        "444444444444": "queue policy statement S3SqsOnboard444444444444AcctSqsConsume",
    }
    assert pm.other_queue_readers(None, g) == {}
    problem = pm.shared_queue_problem("https://q", g, readers)
    assert "\n" not in problem
    assert "account 333333333333" in problem and "account 444444444444" in problem
    assert "own consumer in cdk.json" in problem and "--share-queue" in problem


def test_the_stack_declares_a_queue_s_reader_by_its_consumer_s_account():
    from infra.app import CDK_JSON
    from ops.onboarding.request import declared_queue_readers
    from ops.stack_outputs import StackOutputs

    context = json.loads(CDK_JSON.read_text())["context"]
    analytics = next(c for c in context["consumers"] if c["name"] == "analytics")
    url = "https://sqs.eu-west-1.amazonaws.com/222222222222/S3SqsStack-analytics"
    outputs = StackOutputs("S3SqsStack", {"Consumers": json.dumps({"analytics": {"queueUrl": url}})})
    expected = {analytics["accountId"]: "cdk.json's consumer 'analytics'"}
    assert declared_queue_readers(url, "analytics", None, context) == expected
    # Given by --queue-url: recognised as the consumer's queue by the outputs, whatever the endpoint's host.
    assert declared_queue_readers(url.replace("sqs.eu-west-1.amazonaws.com", "localhost:5000"), None, outputs,
                                  context) == expected
    assert declared_queue_readers("https://sqs.eu-west-1.amazonaws.com/222222222222/other", None, outputs,
                                  context) == {}
    # Outputs that carry the consumer's accountId say so too.
    with_account = StackOutputs("S", {"Consumers": json.dumps({"analytics": {"queueUrl": url,
                                                                             "accountId": "333333333333"}})})
    assert declared_queue_readers(url, None, with_account, None) == {
        "333333333333": "the stack outputs' consumer 'analytics'"}
    # A consumer without accountId is the deploying account's: its job role, in the queue's account, reads it.
    own = {**context, "consumers": [{k: v for k, v in c.items() if k != "accountId"} if c["name"] == "analytics"
                                    else c for c in context["consumers"]],
           "crossAccountPrincipals": [p for p in context["crossAccountPrincipals"]
                                      if f"::{analytics['accountId']}:" not in p]}
    (why,) = declared_queue_readers(url, "analytics", None, own).items()
    assert why[0] == "222222222222" and "no accountId" in why[1]


# ---------------------------------------------------------------- key and bucket policy hygiene

def test_no_kms_describe_key_under_encryption_context_conditions():
    q = "arn:aws:sqs:eu-west-1:222222222222:q"
    for stmt in pm.kms_statements(acct(), "eu-west-1", queue_arn=q, bucket_arns=["arn:aws:s3:::bkt"]):
        assert stmt["Action"] == ["kms:Decrypt"], stmt["Sid"]
    role = pm.consumer_role_policy(partition="aws", buckets=["bkt"], prefixes=["a/"], queue_arn=q,
                                   kms_key_arn="arn:aws:kms:eu-west-1:222222222222:key/k")
    (decrypt,) = [s for s in role["Statement"] if s["Sid"] == "DecryptSourceData"]
    assert decrypt["Action"] == ["kms:Decrypt"]


def test_the_describe_key_statements_of_earlier_versions_are_upgraded_and_still_revoked():
    q = "arn:aws:sqs:eu-west-1:222222222222:q"
    new = pm.kms_statements(acct(), "eu-west-1", queue_arn=q, bucket_arns=[])
    old = [{**s, "Action": ["kms:Decrypt", "kms:DescribeKey"]} for s in new]
    single = {**old[0], "Sid": f"{acct().sid_namespace}KmsDecrypt"}  # the one statement of older versions still
    doc = json.dumps(_queue_policy(FOREIGN["Statement"][0], *old, single))
    plan = pm.plan_grant(doc, new, "key policy", superseded=pm.legacy_kms_statements(new))
    assert plan.conflicts == () and pm.refusals(plan, "key policy", revoke=False, policy_owner=None) == []
    assert plan.after["Statement"][1] == new[0]  # replaced in place
    assert plan.after["Statement"][2] == single  # a grant leaves other Sids alone; a revoke takes it (below)
    # A statement of ours edited otherwise by hand is still a conflict.
    edited = json.dumps(_queue_policy({**new[0], "Action": ["kms:Decrypt", "kms:Encrypt"]}))
    assert pm.plan_grant(edited, new, "k", superseded=pm.legacy_kms_statements(new)).conflicts == (new[0]["Sid"],)
    # Revoke matches by Sid, so what earlier versions wrote goes.
    revoked = pm.plan_revoke(doc, pm.kms_sid_matcher(acct()), "key policy")
    assert revoked.after["Statement"] == [FOREIGN["Statement"][0]]


def test_the_arn_like_encryption_context_of_earlier_versions_is_upgraded():
    """Earlier versions matched the S3 encryption context with ArnLike; the same ARNs match StringLike, which the
    stack's own grants use: a grant replaces that form without calling it a hand edit."""
    q = "arn:aws:sqs:eu-west-1:222222222222:q"
    new = pm.kms_statements(acct(), "eu-west-1", queue_arn=q, bucket_arns=["arn:aws:s3:::bkt"])
    s3 = new[1]
    # The account grant's own ArnLike (aws:PrincipalArn) held the encryption context too.
    old = {**s3, "Condition": {"StringEquals": s3["Condition"]["StringEquals"],
                               "ArnLike": {**s3["Condition"]["StringLike"], **s3["Condition"]["ArnLike"]}}}
    for earlier in (old, {**old, "Action": ["kms:Decrypt", "kms:DescribeKey"]}):
        doc = json.dumps(_queue_policy(new[0], earlier))
        plan = pm.plan_grant(doc, new, "key policy", superseded=pm.legacy_kms_statements(new))
        assert plan.conflicts == () and plan.after["Statement"] == new


def _deny(**over):
    stmt = {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*",
            "Resource": ["arn:aws:s3:::bkt", "arn:aws:s3:::bkt/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
    return {**stmt, **over}


def test_a_grant_adds_the_ssl_only_denial_to_a_bucket_policy_without_one():
    desired = pm.bucket_grant_statements(acct(), "bkt", ["a/"], pm.parse_policy(json.dumps(FOREIGN), "p"))
    # FOREIGN's denial covers the objects only, not the bucket: not equivalent, so ours is added.
    assert desired[-1] == {"Sid": "S3SqsDenyInsecureTransport", "Effect": "Deny", "Principal": {"AWS": "*"},
                           "Action": "s3:*", "Resource": ["arn:aws:s3:::bkt", "arn:aws:s3:::bkt/*"],
                           "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
    assert desired[:-1] == pm.bucket_statements(acct(), "bkt", ["a/"])
    plan = pm.plan_grant(json.dumps(FOREIGN), desired, "bucket policy of s3://bkt")
    assert plan.after["Statement"][:3] == FOREIGN["Statement"] and plan.after["Statement"][-1] == desired[-1]
    assert '"Sid": "S3SqsDenyInsecureTransport"' in pm.policy_diff(plan.before, plan.after, "b")
    # Run again: nothing to add. Revoke: the denial stays, everything of the grantee goes.
    again = pm.bucket_grant_statements(acct(), "bkt", ["a/"], plan.after)
    assert not pm.plan_grant(json.dumps(plan.after), again, "b").changed
    revoked = pm.plan_revoke(json.dumps(plan.after), pm.bucket_sid_matcher(acct(), None), "b")
    assert revoked.after["Statement"] == [*FOREIGN["Statement"], desired[-1]]


@pytest.mark.parametrize("existing, equivalent", [
    ([_deny()], True),  # as CDK's enforceSSL writes it, without a Sid
    ([_deny(Sid="DenyInsecureTransport", Principal="*", Action=["s3:*"],
            Condition={"Bool": {"aws:SecureTransport": ["false"]}})], True),
    ([_deny(Resource="arn:aws:s3:::bkt"), _deny(Resource="arn:aws:s3:::bkt/*")], True),
    ([_deny(Resource="arn:aws:s3:::bkt*")], True),
    ([_deny(Resource="*", Action="*")], True),
    ([_deny(Resource="arn:aws:s3:::bkt/*")], False),  # the bucket itself is left out
    ([_deny(Resource=["arn:aws:s3:::bkt", "arn:aws:s3:::bkt/landing/*"])], False),
    ([_deny(Action="s3:GetObject")], False),
    ([_deny(Principal={"AWS": "arn:aws:iam::333333333333:root"})], False),
    ([_deny(Condition={"Bool": {"aws:SecureTransport": "false"}, "IpAddress": {"aws:SourceIp": "10.0.0.0/8"}})],
     False),
    ([_deny(Effect="Allow")], False),
    ([_deny(Resource="arn:aws:s3:::other-bkt*")], False),
])
def test_an_equivalent_ssl_only_denial_is_not_added_twice(existing, equivalent):
    doc = _queue_policy(*existing)
    assert pm.has_insecure_transport_denial(doc, "bkt") is equivalent
    sids = [s["Sid"] for s in pm.bucket_grant_statements(acct(), "bkt", ["a/"], doc)]
    assert ("S3SqsDenyInsecureTransport" in sids) is not equivalent
