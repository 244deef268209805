"""onboard-account against a moto server, with the owner in one account and the consumer in another."""
from __future__ import annotations

import argparse
import json

import pytest

from infra.contract import POLICY_OWNER_TAG, QUEUE_CONSUME_ACTIONS, key_prefix_problem, principal_pattern_problem
from ops.onboarding import aws as ob
from ops.onboarding import cli as ob_cli
from ops.onboarding import request as ob_request
from ops.onboarding import policy as pm
from tests.ops.helpers import CONSUMER, OWNER, STRANGER, account_credentials, run_script, session_for, unique

# An account grant always carries a condition on the calling principal.
PATTERN = f"arn:aws:iam::{CONSUMER}:role/analytics-*"
ACCT = ["--consumer-account", CONSUMER, "--principal-arn-like", PATTERN]
ACCT_CONDITION = {"ArnLike": {"aws:PrincipalArn": [PATTERN]}}
FOREIGN_BUCKET_STMT = {
    "Sid": "PartnerRead", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{STRANGER}:root"},
    "Action": "s3:GetObject", "Resource": "arn:aws:s3:::{bucket}/partner/*",
}
# A partner that sends to the queue: it reads nothing from it, so a grant there shares the queue with nobody.
FOREIGN_QUEUE_STMT = {
    "Sid": "PartnerSend", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{STRANGER}:root"},
    "Action": "sqs:SendMessage", "Resource": "*",
}


@pytest.fixture
def owner(moto_endpoint):
    """Resources in the owner account, each with a policy someone else already wrote; removed afterwards."""
    sess = session_for(moto_endpoint, OWNER)
    env = account_credentials(moto_endpoint, OWNER)
    s3 = sess.client("s3", endpoint_url=moto_endpoint)
    sqs = sess.client("sqs", endpoint_url=moto_endpoint)
    sns = sess.client("sns", endpoint_url=moto_endpoint)
    kms = sess.client("kms", endpoint_url=moto_endpoint)
    bucket = unique("source")
    s3.create_bucket(Bucket=bucket)
    bucket_stmt = json.loads(json.dumps(FOREIGN_BUCKET_STMT).replace("{bucket}", bucket))
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [bucket_stmt]}))
    queue_url = sqs.create_queue(QueueName=unique("consumer"))["QueueUrl"]
    sqs.set_queue_attributes(QueueUrl=queue_url, Attributes={
        "Policy": json.dumps({"Version": "2012-10-17", "Statement": [FOREIGN_QUEUE_STMT]})})
    topic_arn = sns.create_topic(Name=unique("fanout"))["TopicArn"]
    key_arn = kms.create_key()["KeyMetadata"]["Arn"]
    ns = argparse.Namespace(
        s3=s3, sqs=sqs, sns=sns, kms=kms, bucket=bucket, queue_url=queue_url, topic_arn=topic_arn,
        key_arn=key_arn, env=env, endpoint=moto_endpoint, bucket_stmt=bucket_stmt,
        clients={"s3": s3, "sqs": sqs, "sns": sns, "kms": kms},
    )
    try:
        yield ns
    finally:
        s3.delete_bucket_policy(Bucket=bucket)
        s3.delete_bucket(Bucket=bucket)
        sqs.delete_queue(QueueUrl=queue_url)
        sns.delete_topic(TopicArn=topic_arn)
        kms.schedule_key_deletion(KeyId=key_arn.rsplit("/", 1)[-1], PendingWindowInDays=7)  # moto: key id, not ARN


def policies(o) -> dict:
    def q():
        return o.sqs.get_queue_attributes(QueueUrl=o.queue_url, AttributeNames=["Policy"])["Attributes"].get("Policy")

    def b():
        try:
            return o.s3.get_bucket_policy(Bucket=o.bucket)["Policy"]
        except o.s3.exceptions.ClientError:
            return None
    return {
        "bucket": b(), "queue": q(),
        "topic": o.sns.get_topic_attributes(TopicArn=o.topic_arn)["Attributes"]["Policy"],
        "key": o.kms.get_key_policy(KeyId=o.key_arn, PolicyName="default")["Policy"],
    }


def onboard(o, *args, check=True, cwd=None):
    r = run_script("onboard-account", "--endpoint-url", o.endpoint, "--region", "us-east-1", *args, env=o.env,
                   cwd=cwd)
    if check:
        assert r.returncode == 0, r.stderr
    return r


def queue_args(o):
    return [*ACCT, "--bucket", o.bucket, "--prefix", "landing/orders/",
            "--prefix", "landing/refunds/", "--queue-url", o.queue_url, "--kms-key-arn", o.key_arn]


def stmts(text: str | None) -> list[dict]:
    return pm.statements_of(json.loads(text)) if text else []


def test_dry_run_prints_diffs_and_changes_nothing(owner):
    before = policies(owner)
    r = onboard(owner, *queue_args(owner))
    assert policies(owner) == before
    for label in (f"bucket policy of s3://{owner.bucket}", f"queue policy of {owner.queue_url}", "key policy of"):
        assert f"+++ {label}" in r.stdout
    assert "dry run: 3 of 3 policies would change" in r.stdout
    assert f'"arn:aws:iam::{CONSUMER}:root"' in r.stdout


def test_grant_keeps_foreign_statements_second_run_is_noop_and_revoke_restores(owner):
    original = policies(owner)
    r = onboard(owner, *queue_args(owner), "--apply")
    assert "applied: 3 policies written" in r.stdout
    granted = policies(owner)

    # Foreign statements are byte-for-byte the same objects as before, in the same place.
    assert stmts(granted["bucket"])[0] == owner.bucket_stmt
    assert stmts(granted["queue"])[0] == FOREIGN_QUEUE_STMT
    assert stmts(granted["key"])[0] == stmts(original["key"])[0]
    assert granted["topic"] == original["topic"]  # queue mode leaves the topic alone

    ours = [s for s in stmts(granted["bucket"]) if s["Sid"].startswith(f"S3SqsOnboard{CONSUMER}")]
    # GetObject only (the connector never lists), one per prefix, and only for the matching principals.
    assert {s["Action"] for s in ours} == {"s3:GetObject"} and len(ours) == 2
    assert all(s["Principal"] == {"AWS": f"arn:aws:iam::{CONSUMER}:root"} for s in ours)
    assert all(s["Condition"] == ACCT_CONDITION for s in ours)
    q = [s for s in stmts(granted["queue"]) if s.get("Sid", "").startswith("S3SqsOnboard")]
    queue_arn = owner.sqs.get_queue_attributes(QueueUrl=owner.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    assert q == [pm.queue_statement(pm.Grantee.for_account(CONSUMER, principal_arn_like=[PATTERN]), queue_arn)]
    # The key: decrypt through SQS for this queue only; not through S3, since the key does not encrypt the bucket.
    (k,) = [s for s in stmts(granted["key"]) if s.get("Sid", "").startswith("S3SqsOnboard")]
    assert k["Sid"].endswith("KmsSqs") and k["Condition"]["StringEquals"] == {
        "kms:ViaService": "sqs.us-east-1.amazonaws.com", "kms:EncryptionContext:aws:sqs:arn": queue_arn}
    assert sorted(q[0]["Action"]) == sorted(["sqs:ReceiveMessage", "sqs:DeleteMessage",
                                             "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"])

    # What the consumer needs on its side.
    assert '"Sid": "ReadSourceObjects"' in r.stdout and '"Sid": "ConsumeSourceQueue"' in r.stdout
    assert "s3:ListBucket" not in r.stdout
    assert f'"accountId": "{CONSUMER}"' in r.stdout

    # Second run: nothing to write, nothing written.
    r2 = onboard(owner, *queue_args(owner), "--apply")
    assert "applied: 0 policies written, 3 already as wanted" in r2.stdout
    assert policies(owner) == granted

    # Revoke: back to exactly the original statements, and revoking twice is a no-op. The bucket keeps the
    # SSL-only denial the grant added: it guards every reader of the bucket, not this grant.
    r3 = onboard(owner, *queue_args(owner), "--revoke", "--apply")
    assert "applied: 3 policies written" in r3.stdout
    revoked = policies(owner)
    assert stmts(revoked["bucket"]) == [*stmts(original["bucket"]), pm.insecure_transport_denial(owner.bucket)]
    for k in ("queue", "topic", "key"):
        assert stmts(revoked[k]) == stmts(original[k]), k
    r4 = onboard(owner, *queue_args(owner), "--revoke", "--apply")
    assert "applied: 0 policies written" in r4.stdout


def test_topic_mode_subscribes_the_consumers_queue_filtered_to_its_prefixes(owner):
    """The owner subscribes the consumer's queue with a body filter: the consumer gets no sns:Subscribe, which
    would let it subscribe without a filter and see every event of the bucket."""
    consumer = session_for(owner.endpoint, CONSUMER)
    csqs = consumer.client("sqs", endpoint_url=owner.endpoint)
    cq = csqs.create_queue(QueueName=unique("mine"))["QueueUrl"]
    carn = csqs.get_queue_attributes(QueueUrl=cq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    args = [*ACCT, "--bucket", owner.bucket, "--prefix", "landing/a/", "--prefix", "landing/b/",
            "--topic-arn", owner.topic_arn, "--subscriber-queue-arn", carn]
    try:
        original = policies(owner)
        r = onboard(owner, *args, "--apply")
        assert "applied: 2 policies written" in r.stdout
        assert policies(owner)["topic"] == original["topic"]  # no sns:Subscribe for anyone
        (sub,) = [x for x in owner.sns.list_subscriptions_by_topic(TopicArn=owner.topic_arn)["Subscriptions"]
                  if x["Endpoint"] == carn]
        attrs = owner.sns.get_subscription_attributes(SubscriptionArn=sub["SubscriptionArn"])["Attributes"]
        assert attrs["RawMessageDelivery"] == "true" and attrs["FilterPolicyScope"] == "MessageBody"
        assert json.loads(attrs["FilterPolicy"]) == {
            "Records": {"s3": {"object": {"key": [{"prefix": "landing/a/"}, {"prefix": "landing/b/"}]}}}}
        assert "sns.amazonaws.com" in r.stdout and "confirm-subscription" in r.stdout
        assert onboard(owner, *args, "--apply").stdout.count("already as wanted") == 1

        # Someone widens the filter by hand: a re-run says so and changes nothing without --force.
        owner.sns.set_subscription_attributes(SubscriptionArn=sub["SubscriptionArn"], AttributeName="FilterPolicy",
                                              AttributeValue="{}")
        r = onboard(owner, *args, "--apply", check=False)
        assert r.returncode == 2 and "differ from what this run would write" in r.stderr
        onboard(owner, *args, "--apply", "--force")
        attrs = owner.sns.get_subscription_attributes(SubscriptionArn=sub["SubscriptionArn"])["Attributes"]
        assert "landing/a/" in attrs["FilterPolicy"]

        onboard(owner, *ACCT, "--bucket", owner.bucket, "--topic-arn", owner.topic_arn,
                "--subscriber-queue-arn", carn, "--revoke", "--apply")
        assert not [x for x in owner.sns.list_subscriptions_by_topic(TopicArn=owner.topic_arn)["Subscriptions"]
                    if x["Endpoint"] == carn]
        assert stmts(policies(owner)["bucket"]) == [*stmts(original["bucket"]),
                                                     pm.insecure_transport_denial(owner.bucket)]
    finally:
        csqs.delete_queue(QueueUrl=cq)


def test_topic_mode_needs_the_consumers_queue_in_its_account(owner):
    base = [*ACCT, "--bucket", owner.bucket, "--prefix", "a/", "--topic-arn", owner.topic_arn]
    r = onboard(owner, *base, check=False)
    assert r.returncode == 2 and "--topic-arn needs --subscriber-queue-arn" in r.stderr
    r = onboard(owner, *base, "--subscriber-queue-arn", f"arn:aws:sqs:us-east-1:{STRANGER}:q", check=False)
    assert r.returncode == 2 and f"not the consumer's account {CONSUMER}" in r.stderr


def test_role_principal_and_account_principal_are_revoked_separately(owner):
    role = f"arn:aws:iam::{CONSUMER}:role/analytics-job"
    args = ["--bucket", owner.bucket, "--prefix", "landing/", "--queue-url", owner.queue_url, "--apply"]
    onboard(owner, "--consumer-role-arn", role, *args)
    onboard(owner, *ACCT, *args)
    both = [s for s in stmts(policies(owner)["bucket"]) if s["Effect"] == "Allow"]
    assert {s["Principal"]["AWS"] for s in both[1:]} == {role, f"arn:aws:iam::{CONSUMER}:root"}
    r = onboard(owner, *ACCT, "--bucket", owner.bucket, "--queue-url", owner.queue_url,
                "--revoke", "--apply")
    assert r.returncode == 0
    left = [s for s in stmts(policies(owner)["bucket"]) if s["Effect"] == "Allow"]
    assert left[0] == owner.bucket_stmt
    assert {s["Principal"]["AWS"] for s in left[1:]} == {role}
    q = stmts(policies(owner)["queue"])
    assert [s["Principal"]["AWS"] for s in q] == [FOREIGN_QUEUE_STMT["Principal"]["AWS"], role]
    r = onboard(owner, "--consumer-role-arn", role, "--bucket", owner.bucket, "--prefix", "landing/",
                "--queue-url", owner.queue_url)
    assert '"crossAccountPrincipals"' in r.stdout


def test_outputs_file_fills_bucket_queue_prefix_and_key(owner, tmp_path):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"S3SqsStack": {
        "SourceBucketName": owner.bucket, "TopicArn": owner.topic_arn, "KmsKeyArn": owner.key_arn,
        "Consumers": json.dumps({"analytics": {
            "queueUrl": owner.queue_url, "queueArn": "arn:aws:sqs:us-east-1:222222222222:x", "dlqUrl": "u",
            "dlqArn": "a", "jobRoleArn": "r", "prefix": "analytics/"}}),
    }}))
    r = onboard(owner, *ACCT, "--outputs-file", str(outputs), "--consumer", "analytics", "--apply")
    assert "applied: 3 policies written" in r.stdout
    assert any(s.get("Resource") == f"arn:aws:s3:::{owner.bucket}/analytics/*" for s in stmts(policies(owner)["bucket"]))
    # 'analytics' is a consumer of the stack already: the cdk.json entry must not reuse the name.
    assert f'"name": "analytics-{CONSUMER}"' in r.stdout and "'analytics' already names a consumer" in r.stderr
    # No consumer named: the prefix must be given; a bare --topic-arn takes the stack's topic.
    r = onboard(owner, *ACCT, "--outputs-file", str(outputs), "--topic-arn", check=False)
    assert r.returncode == 2 and "no prefix" in r.stderr
    r = onboard(owner, *ACCT, "--outputs-file", str(outputs), "--topic-arn", "--prefix", "x/",
                "--subscriber-queue-arn", f"arn:aws:sqs:us-east-1:{CONSUMER}:mine")
    assert f"+++ subscription of arn:aws:sqs:us-east-1:{CONSUMER}:mine to {owner.topic_arn}" in r.stdout
    r = onboard(owner, *ACCT, "--outputs-file", str(outputs), "--consumer", "analytcs", check=False)
    assert r.returncode == 2 and "unknown consumer 'analytcs' (did you mean 'analytics'?)" in r.stderr


def test_outputs_file_defaults_to_cdk_outputs_json_and_is_read_only_when_needed(owner, tmp_path):
    base = [*ACCT, "--prefix", "a/", "--queue-url", owner.queue_url]
    r = onboard(owner, *base, check=False, cwd=tmp_path)
    assert r.returncode == 2
    assert ("without --bucket, the source bucket comes from the stack outputs, but cdk-outputs.json (the default "
            "--outputs-file) does not exist") in r.stderr
    (tmp_path / "cdk-outputs.json").write_text(json.dumps({"S3SqsStack": {"SourceBucketName": owner.bucket}}))
    r = onboard(owner, *base, cwd=tmp_path)
    assert f"+++ bucket policy of s3://{owner.bucket}" in r.stdout
    # Everything given by flag: the file is not read, even when it is broken.
    (tmp_path / "cdk-outputs.json").write_text("{not json")
    r = onboard(owner, *base, "--bucket", owner.bucket, cwd=tmp_path)
    assert f"+++ bucket policy of s3://{owner.bucket}" in r.stdout


def test_the_printed_cdk_json_entry_passes_synth_s_checks(owner, tmp_path):
    """With cdk.json at hand, the entry fits it: a taken name is not reused, the same account adds only its role."""
    from infra.app import CDK_JSON
    from infra.config import parse_config

    context = json.loads(CDK_JSON.read_text())["context"]
    analytics = next(c for c in context["consumers"] if c["name"] == "analytics")
    base = ["--bucket", owner.bucket, "--prefix", "analytics/", "--queue-url", owner.queue_url,
            "--consumer", "analytics", "--cdk-json", str(CDK_JSON)]

    def printed_entry(stdout: str) -> dict:
        return json.loads(stdout.split("so the next `cdk deploy` keeps the grant:\n", 1)[1])

    r = onboard(owner, *ACCT, *base)
    entry = printed_entry(r.stdout)
    assert entry["consumers"] == [{"name": f"analytics-{CONSUMER}", "accountId": CONSUMER, "prefix": "analytics/",
                                   "accountAccess": {"principalArnLike": [PATTERN]}}]
    assert f"'analytics' already names a consumer for account {analytics['accountId']}" in r.stderr
    parse_config({**context, "consumers": context["consumers"] + entry["consumers"]})  # what synth checks

    role = f"arn:aws:iam::{analytics['accountId']}:role/analytics-second-job"
    r = onboard(owner, "--consumer-role-arn", role, *base)
    entry = printed_entry(r.stdout)
    assert entry == {"crossAccountPrincipals": [role]}
    assert f"consumer 'analytics' is already in cdk.json for account {analytics['accountId']}" in r.stderr
    parse_config({**context, "crossAccountPrincipals": context["crossAccountPrincipals"] + [role]})

    # An entry synth would still refuse is said so, with synth's own message.
    narrow = tmp_path / "cdk.json"
    narrow.write_text(json.dumps({"context": {**context, "eventFilter": {"prefix": "analytics/"}}}))
    r = onboard(owner, *ACCT, "--bucket", owner.bucket, "--prefix", "landing/",
                "--queue-url", owner.queue_url, "--cdk-json", str(narrow))
    assert "lies outside eventFilter.prefix 'analytics/'" in r.stderr
    assert "with this entry, cdk synth would fail" in r.stderr


@pytest.mark.parametrize("args,message", [
    (["--consumer-account", "12345"], "--consumer-account '12345' is not an AWS account id: use exactly 12 digits"),
    (["--consumer-account", "1111111111111"], "exactly 12 digits"),
    (["--consumer-role-arn", "arn:aws:iam::111111111111:user/bob"], "--consumer-role-arn"),
])
def test_bad_consumer_is_rejected_before_any_aws_call(owner, args, message):
    before = policies(owner)
    r = onboard(owner, *args, "--bucket", owner.bucket, "--prefix", "a/", "--queue-url", owner.queue_url,
                "--apply", check=False)
    assert r.returncode == 2
    assert message in r.stderr
    assert policies(owner) == before


@pytest.mark.parametrize("args,message", [
    (["--bucket", "Not_A_Bucket", "--prefix", "a/"], "--bucket 'Not_A_Bucket' is not a valid S3 bucket name"),
    (["--bucket", "{bucket}"], "no prefix: pass --prefix"),
    (["--bucket", "{bucket}", "--prefix", "a/*"], "contains a wildcard"),
    (["--prefix", "a/"], "without --bucket, the source bucket comes from the stack outputs"),
    (["--bucket", "{bucket}", "--prefix", "a/", "--kms-key-arn", "alias/data"], "aliases are not accepted"),
    (["--bucket", "{bucket}", "--prefix", "a/", "--consumer", "Bad Name"], "--consumer 'Bad Name'"),
])
def test_bad_flags_get_clear_errors(owner, args, message):
    args = [a.replace("{bucket}", owner.bucket) for a in args]
    r = onboard(owner, *ACCT, *args, "--queue-url", owner.queue_url, "--apply", check=False)
    assert r.returncode == 2, r.stdout
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_bad_queue_url_and_missing_target(owner):
    base = [*ACCT, "--bucket", owner.bucket, "--prefix", "a/"]
    r = onboard(owner, *base, check=False)
    assert r.returncode == 2 and "pass --queue-url" in r.stderr
    r = onboard(owner, *base, "--queue-url", "not-a-url", check=False)
    assert r.returncode == 2 and "--queue-url 'not-a-url' is not an SQS queue URL" in r.stderr
    r = onboard(owner, *base, "--topic-arn", "arn:aws:sqs:us-east-1:222222222222:q", check=False)
    assert r.returncode == 2 and "is not an SNS topic ARN" in r.stderr
    r = onboard(owner, *base, "--queue-url", owner.queue_url, "--topic-arn", owner.topic_arn, check=False)
    assert r.returncode == 2 and "not allowed with argument" in r.stderr
    r = onboard(owner, *base, "--queue-url", owner.queue_url, "--apply", "--dry-run", check=False)
    assert r.returncode == 2 and "not allowed with argument" in r.stderr
    r = onboard(owner, *base, "--queue-url", owner.queue_url, "--dry-run")
    assert "dry run: 2 of 2 policies would change" in r.stdout


def test_bucket_that_does_not_exist(owner):
    r = onboard(owner, *ACCT, "--bucket", unique("missing"), "--prefix", "a/",
                "--queue-url", owner.queue_url, "--apply", check=False)
    assert r.returncode == 2
    assert "does not exist" in r.stderr and "check --bucket" in r.stderr
    assert "Traceback" not in r.stderr


def test_queue_that_does_not_exist(owner):
    url = owner.queue_url.rsplit("/", 1)[0] + "/" + unique("gone")
    r = onboard(owner, *ACCT, "--bucket", owner.bucket, "--prefix", "a/",
                "--queue-url", url, check=False)
    assert r.returncode == 2 and "does not exist: check --queue-url" in r.stderr


def test_malformed_existing_bucket_policy_is_never_overwritten(owner):
    owner.s3.put_bucket_policy(Bucket=owner.bucket, Policy="{this is not json")
    before = policies(owner)
    r = onboard(owner, *queue_args(owner), "--apply", check=False)
    assert r.returncode == 2
    assert f"bucket policy of s3://{owner.bucket} is not valid JSON" in r.stderr
    assert "refusing to overwrite" in r.stderr
    assert policies(owner) == before
    r = onboard(owner, *queue_args(owner), "--revoke", "--apply", check=False)
    assert r.returncode == 2 and policies(owner) == before


def test_malformed_key_policy_is_refused(owner):
    owner.kms.put_key_policy(KeyId=owner.key_arn, PolicyName="default", Policy='{"Statement": {"oops": 1}, "x": [}')
    before = policies(owner)
    r = onboard(owner, *queue_args(owner), "--apply", check=False)
    assert r.returncode == 2 and "key policy of" in r.stderr and "not valid JSON" in r.stderr
    assert policies(owner) == before  # every policy is checked before any is written


# ---------------------------------------------------------------- concurrency, in process

def request(o, **over) -> ob_request.Request:
    args = ob_cli.parser().parse_args(queue_args(o) + ["--apply", "--endpoint-url", o.endpoint])
    req = ob_request.build_request(args, "us-east-1")
    for k, v in over.items():
        setattr(req, k, v)
    return req


class Meddler:
    """A bucket policy store whose policy someone else edits between our first read and our write."""

    def __init__(self, inner: ob.BucketPolicyStore, edits: int):
        self.inner, self.edits, self.reads = inner, edits, 0

    @property
    def label(self):
        return self.inner.label

    def read(self):
        self.reads += 1
        text = self.inner.read()
        if self.reads >= 2 and self.edits > 0:  # after our first read: a colleague adds a statement
            self.edits -= 1
            doc = json.loads(text)
            doc["Statement"].append({"Sid": f"Colleague{self.reads}", "Effect": "Allow",
                                     "Principal": {"AWS": f"arn:aws:iam::{STRANGER}:root"},
                                     "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{self.inner.name}/c/*"})
            self.inner.write(doc)
            text = self.inner.read()
        return text

    def write(self, doc):
        self.inner.write(doc)


def test_concurrent_edit_is_re_read_and_kept(owner):
    req = request(owner)
    target = ob.build_targets(req, owner.clients)[0]
    meddler = Meddler(target.store, edits=1)
    target.store = meddler
    log = []
    outcome = ob.commit(ob.prepare(target), log.append)
    assert outcome.written
    assert any("changed since it was read" in line for line in log)
    sids = [s.get("Sid") for s in stmts(policies(owner)["bucket"])]
    assert sids[0] == "PartnerRead" and "Colleague2" in sids
    assert sum(1 for s in sids if s.startswith("S3SqsOnboard")) == 2


def test_policy_that_keeps_changing_aborts_without_losing_edits(owner):
    req = request(owner)
    target = ob.build_targets(req, owner.clients)[0]
    target.store = Meddler(target.store, edits=99)
    with pytest.raises(ob.ConcurrentEditError, match="kept changing"):
        ob.commit(ob.prepare(target), lambda m: None)
    sids = [s.get("Sid") for s in stmts(policies(owner)["bucket"])]
    assert sids[0] == "PartnerRead" and sum(1 for s in sids if s.startswith("Colleague")) == ob.MAX_ATTEMPTS
    assert not any(s.startswith("S3SqsOnboard") for s in sids)


def test_cdk_context_entry_is_accepted_by_the_infra_config():
    config = pytest.importorskip("infra.config")
    g = pm.Grantee.for_role(f"arn:aws:iam::{CONSUMER}:role/analytics-job")
    frag, notes = ob_request.cdk_context_entry("partner-analytics", g, ["landing/a/", "landing/b/"])
    assert notes == []
    assert frag["consumers"][0]["prefix"] == "landing/"
    cfg = config.parse_config({
        "sourceBucket": {"mode": "new"},
        "consumers": frag["consumers"],
        "crossAccountPrincipals": frag["crossAccountPrincipals"],
    })
    c = cfg.consumers[0]
    assert (c.name, c.account_id, c.prefix) == ("partner-analytics", CONSUMER, "landing/")
    assert cfg.principals_for(c) == (g.role_arn,)


class LaggingStore:
    """Serves the previous policy for a few reads after each write, as eventually consistent APIs do."""

    label = "queue policy of lagging"

    def __init__(self, text: str | None, lag_reads: int):
        self.current = self.served = text
        self.lag_reads, self.pending = lag_reads, 0

    def read(self):
        if self.pending:
            self.pending -= 1
            return self.served
        self.served = self.current
        return self.current

    def write(self, doc):
        self.served, self.current = self.current, json.dumps(doc) if doc else None
        self.pending = self.lag_reads


def _lagging_target(store) -> ob.Target:
    desired = [pm.queue_statement(pm.Grantee.for_account(CONSUMER, principal_arn_like=[PATTERN]),
                                  "arn:aws:sqs:us-east-1:222222222222:q")]
    return ob.Target(store, lambda t: pm.plan_grant(t, desired, store.label), lambda d: pm.has_statements(d, desired))


def test_slow_propagation_is_waited_for_not_taken_for_an_edit():
    store = LaggingStore(json.dumps({"Version": "2012-10-17", "Statement": [FOREIGN_QUEUE_STMT]}), lag_reads=2)
    slept, log = [], []
    outcome = ob.commit(ob.prepare(_lagging_target(store)), log.append, sleep=slept.append)
    assert outcome.written and slept == [1, 2] and log == []
    assert pm.statements_of(json.loads(store.current))[0] == FOREIGN_QUEUE_STMT


def test_write_that_never_shows_up_is_an_error():
    store = LaggingStore(None, lag_reads=10**6)
    slept = []
    with pytest.raises(ob.OnboardError, match="old policy is still served"):
        ob.commit(ob.prepare(_lagging_target(store)), lambda m: None, sleep=slept.append)
    assert sum(slept) == sum(ob.SETTLE_WAITS)


# ---------------------------------------------------------------- refusals and warnings

def test_an_account_grant_without_a_condition_is_refused(owner):
    before = policies(owner)
    r = onboard(owner, "--consumer-account", CONSUMER, "--bucket", owner.bucket, "--prefix", "a/",
                "--queue-url", owner.queue_url, "--apply", check=False)
    assert r.returncode == 2 and "--principal-arn-like" in r.stderr and "--consumer-role-arn" in r.stderr
    assert policies(owner) == before


def test_a_hand_edited_statement_is_not_silently_reverted(owner):
    onboard(owner, *queue_args(owner), "--apply")
    doc = json.loads(policies(owner)["queue"])
    ours = next(s for s in doc["Statement"] if s.get("Sid", "").endswith("SqsConsume"))
    ours["Action"] = ["sqs:ReceiveMessage"]  # someone narrowed it by hand
    owner.sqs.set_queue_attributes(QueueUrl=owner.queue_url, Attributes={"Policy": json.dumps(doc)})
    edited = policies(owner)

    r = onboard(owner, *queue_args(owner))  # a dry run warns
    assert f"warning: queue policy of {owner.queue_url}: onboarding's own statement(s) {ours['Sid']}" in r.stderr
    r = onboard(owner, *queue_args(owner), "--apply", check=False)
    assert r.returncode == 2 and "refusing to write, nothing changed" in r.stderr and "--force" in r.stderr
    assert policies(owner) == edited  # not even the other policies were written
    onboard(owner, *queue_args(owner), "--apply", "--force")
    (back,) = [s for s in stmts(policies(owner)["queue"]) if s.get("Sid") == ours["Sid"]]
    assert len(back["Action"]) == 4


def test_a_policy_the_stack_template_owns_needs_force_and_says_why(owner):
    owner.sqs.tag_queue(QueueUrl=owner.queue_url, Tags={POLICY_OWNER_TAG: "S3SqsStreaming"})
    before = policies(owner)
    r = onboard(owner, *queue_args(owner), "--apply", check=False)
    assert r.returncode == 2 and "part of CloudFormation stack S3SqsStreaming's template" in r.stderr
    assert "Add the printed cdk.json entry and deploy" in r.stderr and policies(owner) == before
    # The entry it says to add is printed, the same one a dry run prints.
    entry = r.stdout[r.stdout.index("# cdk.json context:"):]
    dry = onboard(owner, *queue_args(owner)).stdout
    assert entry == dry[dry.index("# cdk.json context:"):]
    assert json.loads(entry.split("\n", 1)[1])["consumers"][0]["accountId"] == CONSUMER
    r = onboard(owner, *queue_args(owner), "--apply", "--force")
    assert "note (--force)" in r.stderr and "applied: 3 policies written" in r.stdout
    # Taking back only onboarding's own statements is never refused.
    onboard(owner, *queue_args(owner), "--revoke", "--apply")
    assert stmts(policies(owner)["queue"]) == stmts(before["queue"])


def test_revoke_without_the_key_warns_that_its_grant_stays(owner):
    onboard(owner, *queue_args(owner), "--apply")
    args = [a for a in queue_args(owner) if a not in ("--kms-key-arn", owner.key_arn)]
    r = onboard(owner, *args, "--revoke", "--apply")
    assert "warning: no --kms-key-arn" in r.stderr and "kms:Decrypt statements" in r.stderr
    assert any(s.get("Sid", "").startswith("S3SqsOnboard") for s in stmts(policies(owner)["key"]))


def test_list_bucket_of_earlier_versions_goes_and_s3_decrypt_only_where_the_key_encrypts(owner):
    grantee = pm.Grantee.for_account(CONSUMER, principal_arn_like=[PATTERN])
    (legacy_sid,) = pm.legacy_bucket_sids(grantee, ["landing/orders/"])
    doc = json.loads(policies(owner)["bucket"])
    doc["Statement"].append({"Sid": legacy_sid, "Effect": "Allow", "Principal": {"AWS": grantee.principal},
                             "Action": "s3:ListBucket", "Resource": f"arn:aws:s3:::{owner.bucket}"})
    owner.s3.put_bucket_policy(Bucket=owner.bucket, Policy=json.dumps(doc))
    owner.s3.put_bucket_encryption(Bucket=owner.bucket, ServerSideEncryptionConfiguration={"Rules": [
        {"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": owner.key_arn}}]})
    onboard(owner, *queue_args(owner), "--apply")
    assert legacy_sid not in {s.get("Sid") for s in stmts(policies(owner)["bucket"])}
    key = {s["Sid"].rsplit("Acct", 1)[1]: s for s in stmts(policies(owner)["key"]) if "Sid" in s
           and s["Sid"].startswith("S3SqsOnboard")}
    assert set(key) == {"KmsSqs", "KmsS3"}
    assert key["KmsS3"]["Condition"]["StringEquals"]["kms:ViaService"] == "s3.us-east-1.amazonaws.com"
    assert key["KmsS3"]["Condition"]["ArnLike"]["aws:PrincipalArn"] == [PATTERN]


def test_cdk_context_entry_for_an_account_carries_its_conditions():
    config = pytest.importorskip("infra.config")
    g = pm.Grantee.for_account(CONSUMER, principal_arn_like=[PATTERN], principal_org_id="o-a1b2c3d4e5")
    frag, notes = ob_request.cdk_context_entry("partner", g, ["landing/"])
    assert "crossAccountPrincipals" not in frag and notes == []
    cfg = config.parse_config({"sourceBucket": {"mode": "new"}, "consumers": frag["consumers"]})
    assert cfg.grant_for(cfg.consumers[0]).conditions == {
        "ArnLike": {"aws:PrincipalArn": [PATTERN]}, "StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}}


# ---------------------------------------------------------------- one queue, one consuming account

# Another account that already consumes the owner's queue: the tenant a newcomer would compete with.
INCUMBENT_QUEUE_STMT = {
    "Sid": "IncumbentConsume", "Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{STRANGER}:role/reader"},
    "Action": list(QUEUE_CONSUME_ACTIONS), "Resource": "*",
}


def add_statement(o, which: str, stmt: dict) -> None:
    doc = json.loads(policies(o)[which])
    doc["Statement"].append(stmt)
    if which == "queue":
        o.sqs.set_queue_attributes(QueueUrl=o.queue_url, Attributes={"Policy": json.dumps(doc)})
    elif which == "bucket":
        o.s3.put_bucket_policy(Bucket=o.bucket, Policy=json.dumps(doc))
    else:
        o.kms.put_key_policy(KeyId=o.key_arn, PolicyName="default", Policy=json.dumps(doc))


def error_line(r) -> str:
    (line,) = [x for x in r.stderr.splitlines() if x.startswith("onboard-account: error:")]
    assert "Traceback" not in r.stderr
    return line


def test_a_queue_another_account_consumes_is_refused_unless_shared(owner):
    add_statement(owner, "queue", INCUMBENT_QUEUE_STMT)
    before = policies(owner)

    r = onboard(owner, *queue_args(owner), "--apply", check=False)
    assert r.returncode == 2
    line = error_line(r)
    assert f"account {STRANGER} (queue policy statement IncumbentConsume)" in line
    assert "own consumer in cdk.json" in line and "--share-queue" in line
    assert policies(owner) == before  # nothing written: not the bucket, the queue or the key
    # --force overrides other refusals, not this one.
    r = onboard(owner, *queue_args(owner), "--apply", "--force", check=False)
    assert r.returncode == 2 and "--share-queue" in error_line(r) and policies(owner) == before
    # A dry run says what --apply would refuse.
    r = onboard(owner, *queue_args(owner))
    assert f"warning: --apply would refuse: queue {owner.queue_url} is already consumed by account {STRANGER}" \
        in r.stderr and policies(owner) == before

    r = onboard(owner, *queue_args(owner), "--apply", "--share-queue")
    assert f"note: --share-queue: queue {owner.queue_url} is shared with account {STRANGER}" in r.stderr
    assert "applied: 3 policies written" in r.stdout
    queue = stmts(policies(owner)["queue"])
    assert queue[:2] == [FOREIGN_QUEUE_STMT, INCUMBENT_QUEUE_STMT]
    assert [s["Sid"] for s in queue[2:]] == [f"S3SqsOnboard{CONSUMER}AcctSqsConsume"]
    # Shared once on purpose: a re-run has nothing to add to the queue, so nothing to refuse.
    assert "applied: 0 policies written" in onboard(owner, *queue_args(owner), "--apply").stdout
    onboard(owner, *queue_args(owner), "--revoke", "--apply")
    assert stmts(policies(owner)["queue"]) == [FOREIGN_QUEUE_STMT, INCUMBENT_QUEUE_STMT]

    # Topic mode reads the consumer's own queue: nothing there to share.
    r = onboard(owner, *ACCT, "--bucket", owner.bucket, "--prefix", "a/", "--topic-arn", owner.topic_arn,
                "--subscriber-queue-arn", f"arn:aws:sqs:us-east-1:{CONSUMER}:mine", "--share-queue", check=False)
    assert r.returncode == 2 and "--share-queue is for queue mode" in error_line(r)


def test_a_consumer_queue_cdk_json_gives_another_account_is_refused(owner, tmp_path):
    """`--consumer analytics` for a new account: cdk.json says analytics is another account's, so its queue is
    too, even before the queue policy says so."""
    from infra.app import CDK_JSON

    incumbent = next(c for c in json.loads(CDK_JSON.read_text())["context"]["consumers"]
                     if c["name"] == "analytics")["accountId"]
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"S3SqsStack": {"SourceBucketName": owner.bucket, "KmsKeyArn": owner.key_arn,
                                                  "Consumers": json.dumps({"analytics": {
                                                      "queueUrl": owner.queue_url, "queueArn": "a", "dlqUrl": "u",
                                                      "dlqArn": "a", "jobRoleArn": "r", "prefix": "analytics/"}})}}))
    base = ["--outputs-file", str(outputs), "--consumer", "analytics", "--cdk-json", str(CDK_JSON), "--apply"]
    before = policies(owner)
    r = onboard(owner, *ACCT, *base, check=False)
    assert r.returncode == 2
    line = error_line(r)
    assert f"already consumed by account {incumbent} (cdk.json's consumer 'analytics')" in line
    assert f'"accountId": "{CONSUMER}"' in line and "--share-queue" in line
    assert policies(owner) == before
    # The same queue named by --queue-url is recognised through the outputs.
    r = onboard(owner, *ACCT, *base, "--queue-url", owner.queue_url, check=False)
    assert r.returncode == 2 and f"account {incumbent} (cdk.json's consumer 'analytics')" in error_line(r)
    assert policies(owner) == before
    # A role of the consumer's own account is no newcomer.
    r = onboard(owner, "--consumer-role-arn", f"arn:aws:iam::{incumbent}:role/analytics-second-job", *base)
    assert "applied: 3 policies written" in r.stdout and "--share-queue" not in r.stderr


def test_a_user_pattern_is_refused_with_cdk_json_s_rule(owner):
    from infra.app import CDK_JSON
    from infra.config import ConfigError, parse_config

    user = f"arn:aws:iam::{CONSUMER}:user/*"
    problem = principal_pattern_problem(user, CONSUMER)
    before = policies(owner)
    r = onboard(owner, "--consumer-account", CONSUMER, "--principal-arn-like", user, "--bucket", owner.bucket,
                "--prefix", "landing/", "--queue-url", owner.queue_url, "--apply", check=False)
    assert r.returncode == 2
    assert error_line(r) == f"onboard-account: error: --principal-arn-like {problem}"
    assert policies(owner) == before
    # One rule: cdk.json refuses the same pattern with the same words.
    context = json.loads(CDK_JSON.read_text())["context"]
    context["consumers"].append({"name": "partner", "accountId": CONSUMER, "prefix": "landing/",
                                 "accountAccess": {"principalArnLike": [user]}})
    with pytest.raises(ConfigError) as e:
        parse_config(context)
    assert problem in str(e.value)


def test_a_prefix_without_its_slash_is_refused_but_an_old_grant_of_one_is_revoked(owner, tmp_path):
    before = policies(owner)
    r = onboard(owner, *ACCT, "--bucket", owner.bucket, "--prefix", "analytics", "--queue-url", owner.queue_url,
                "--apply", check=False)
    assert r.returncode == 2 and error_line(r) == f"onboard-account: error: --prefix {key_prefix_problem('analytics')}"
    assert policies(owner) == before
    # A consumer's prefix from the outputs is held to the same rule, and the message says where it came from.
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"S3SqsStack": {"SourceBucketName": owner.bucket, "Consumers": json.dumps({
        "old": {"queueUrl": owner.queue_url, "queueArn": "a", "dlqUrl": "u", "dlqArn": "a", "jobRoleArn": "r",
                "prefix": "analytics"}})}}))
    r = onboard(owner, *ACCT, "--outputs-file", str(outputs), "--consumer", "old", "--apply", check=False)
    assert r.returncode == 2 and "--consumer old's prefix (from the stack outputs; or pass --prefix) 'analytics' " \
        "also covers every key that merely starts with it" in error_line(r)
    assert policies(owner) == before

    # What an earlier version granted for 'analytics' (it covers analytics-private/ too): a revoke still takes it.
    grantee = pm.Grantee.for_account(CONSUMER, principal_arn_like=[PATTERN])
    for stmt in pm.bucket_statements(grantee, owner.bucket, ["analytics"]):
        add_statement(owner, "bucket", stmt)
    r = onboard(owner, *ACCT, "--bucket", owner.bucket, "--prefix", "analytics", "--queue-url", owner.queue_url,
                "--revoke", "--apply")
    assert "applied: 1 policies written" in r.stdout
    assert stmts(policies(owner)["bucket"]) == [owner.bucket_stmt]


def test_a_grant_makes_sure_the_bucket_refuses_plain_http_and_a_revoke_leaves_that(owner):
    r = onboard(owner, *queue_args(owner))
    bucket_diff = r.stdout.split(f"+++ bucket policy of s3://{owner.bucket} (proposed)", 1)[1].split("\n--- ", 1)[0]
    assert '+      "Sid": "S3SqsDenyInsecureTransport",' in bucket_diff
    assert '+          "aws:SecureTransport": "false"' in bucket_diff
    deny = pm.insecure_transport_denial(owner.bucket)

    onboard(owner, *queue_args(owner), "--apply")
    bucket = stmts(policies(owner)["bucket"])
    assert bucket[0] == owner.bucket_stmt and bucket[-1] == deny == {
        "Sid": "S3SqsDenyInsecureTransport", "Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*",
        "Resource": [f"arn:aws:s3:::{owner.bucket}", f"arn:aws:s3:::{owner.bucket}/*"],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
    assert "applied: 0 policies written" in onboard(owner, *queue_args(owner), "--apply").stdout
    onboard(owner, *queue_args(owner), "--revoke", "--apply")
    assert stmts(policies(owner)["bucket"]) == [owner.bucket_stmt, deny]

    # A bucket that refuses plain HTTP already (as CDK's enforceSSL writes it, without a Sid) gets no second denial.
    own = {"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*",
           "Resource": [f"arn:aws:s3:::{owner.bucket}/*", f"arn:aws:s3:::{owner.bucket}"],
           "Condition": {"Bool": {"aws:SecureTransport": "false"}}}
    owner.s3.put_bucket_policy(Bucket=owner.bucket, Policy=json.dumps(
        {"Version": "2012-10-17", "Statement": [owner.bucket_stmt, own]}))
    r = onboard(owner, *queue_args(owner), "--apply")
    assert "S3SqsDenyInsecureTransport" not in r.stdout
    bucket = stmts(policies(owner)["bucket"])
    assert bucket[:2] == [owner.bucket_stmt, own] and {s["Action"] for s in bucket[2:]} == {"s3:GetObject"}


def test_key_grants_carry_no_describe_key_and_earlier_ones_are_upgraded_or_revoked(owner):
    grantee = pm.Grantee.for_account(CONSUMER, principal_arn_like=[PATTERN])
    queue_arn = owner.sqs.get_queue_attributes(QueueUrl=owner.queue_url,
                                               AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    # What an earlier version wrote: the same statement with kms:DescribeKey.
    (current,) = pm.kms_statements(grantee, "us-east-1", queue_arn=queue_arn, bucket_arns=[])
    add_statement(owner, "key", {**current, "Action": ["kms:Decrypt", "kms:DescribeKey"]})

    r = onboard(owner, *queue_args(owner), "--apply")  # no --force: an upgrade, not a hand edit to keep
    assert "differ from what this run would write" not in r.stderr
    ours = [s for s in stmts(policies(owner)["key"]) if s.get("Sid", "").startswith("S3SqsOnboard")]
    assert ours == [current] and current["Action"] == ["kms:Decrypt"]
    role_policy = json.loads(r.stdout.split("in account 111111111111:\n", 1)[1].split("\n\n#", 1)[0])
    (decrypt,) = [s for s in role_policy["Statement"] if s["Sid"] == "DecryptSourceData"]
    assert decrypt["Action"] == ["kms:Decrypt"]

    # The single statement of still older versions goes with a revoke, matched by its Sid.
    add_statement(owner, "key", {**current, "Sid": f"{grantee.sid_namespace}KmsDecrypt",
                                 "Action": ["kms:Decrypt", "kms:DescribeKey"]})
    onboard(owner, *queue_args(owner), "--revoke", "--apply")
    assert not [s for s in stmts(policies(owner)["key"]) if s.get("Sid", "").startswith("S3SqsOnboard")]
