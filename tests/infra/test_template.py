"""The synthesized template, checked resource by resource against the issue's list.

`template`/`template_dict` use cdk.json's own context (new bucket, SQS/SNS-managed encryption, two
consumers); `variant_*` use VARIANT_CONTEXT (imported bucket, customer-managed key, event filters).
"""
from __future__ import annotations

import fnmatch
import hashlib
import json

import pytest
from aws_cdk.assertions import Match

from s3sqs.job import metrics as job_metrics
from tests.infra.conftest import CDK_JSON_ALARMS, VARIANT_CONTEXT

REQUIRED_OUTPUTS = {"TopicArn", "SourceBucketName", "CheckpointBucketName", "ArtifactsBucketName",
                    "EmrApplicationId", "AlarmTopicArn", "Consumers"}
CONSUMER_FIELDS = ("queueUrl", "queueArn", "dlqUrl", "dlqArn", "jobRoleArn", "prefix", "checkpointUri", "outputUri",
                   "artifactsUri", "logUri", "logGroupName", "dashboardName")
OWNER_TAG = {"Key": "s3sqs:policy-owner", "Value": "S3SqsStreaming"}


# --- helpers --------------------------------------------------------------------------------------

def of_type(tpl: dict, rtype: str) -> dict[str, dict]:
    return {lid: r for lid, r in tpl["Resources"].items() if r["Type"] == rtype}


def one(tpl: dict, rtype: str, prefix: str) -> tuple[str, dict]:
    found = [(lid, r) for lid, r in of_type(tpl, rtype).items() if lid.startswith(prefix)]
    assert len(found) == 1, f"expected one {rtype} named {prefix}*, found {[f[0] for f in found]}"
    return found[0]


def getatt(lid: str, attr: str = "Arn") -> dict:
    return {"Fn::GetAtt": [lid, attr]}


def statements(doc: dict) -> list[dict]:
    s = doc["Statement"]
    return s if isinstance(s, list) else [s]


def as_list(x) -> list:
    return x if isinstance(x, list) else [x]


def ssl_deny(doc: dict) -> bool:
    return any(
        s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
        for s in statements(doc)
    )


def join_text(value) -> str:
    """Flatten a Fn::Join (or plain string) to text with <Ref>/<Id.Attr> placeholders, for matching."""
    if isinstance(value, str):
        return value
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(join_text(p) for p in parts)
    if "Ref" in value:
        return f"<{value['Ref']}>"
    if "Fn::GetAtt" in value:
        return "<{}.{}>".format(*value["Fn::GetAtt"])
    raise AssertionError(f"unexpected {value}")


# --- inventory ------------------------------------------------------------------------------------

EXPECTED_DEFAULT_COUNTS = {
    "AWS::S3::Bucket": 4,                  # access logs, source, checkpoints, artifacts
    "AWS::S3::BucketPolicy": 4,
    "Custom::S3BucketNotifications": 1,
    "AWS::Lambda::Function": 1,            # CDK's handler behind Custom::S3BucketNotifications
    "AWS::IAM::Role": 3,                   # the handler's role, one job role per consumer
    "AWS::IAM::Policy": 1,                 # the handler's PutBucketNotification policy
    "AWS::SNS::Topic": 2,                  # the fan-out topic and the alarm topic
    "AWS::SNS::TopicPolicy": 2,
    "AWS::SQS::Queue": 4,                  # queue + DLQ per consumer
    "AWS::SQS::QueuePolicy": 4,
    "AWS::SNS::Subscription": 2,           # a queue per consumer; cdk.json's example lists no alarm e-mails
    "AWS::CloudWatch::Alarm": 11,          # DLQ depth, oldest message age, quarantined files, malformed rows,
                                           # query failures per consumer, and failed job runs of the application
    "AWS::CloudWatch::Dashboard": 2,       # one per consumer
    "AWS::Logs::LogGroup": 2,              # one per consumer
    "AWS::EMRServerless::Application": 1,
    "AWS::KMS::Key": 1,                    # the topic's own key
    "AWS::IAM::ManagedPolicy": 1,          # the operators' (OperatorPolicyArn)
}


def test_every_resource_is_accounted_for(template_dict):
    counts: dict[str, int] = {}
    for r in template_dict["Resources"].values():
        counts[r["Type"]] = counts.get(r["Type"], 0) + 1
    assert counts == EXPECTED_DEFAULT_COUNTS


def test_variant_has_one_key_for_all_and_drops_the_source_bucket(variant_template_dict):
    counts: dict[str, int] = {}
    for r in variant_template_dict["Resources"].values():
        counts[r["Type"]] = counts.get(r["Type"], 0) + 1
    expected = dict(EXPECTED_DEFAULT_COUNTS)
    expected.update({"AWS::S3::Bucket": 3, "AWS::S3::BucketPolicy": 3,
                     "AWS::SNS::Subscription": 4})  # and the two alarm e-mails
    assert counts == expected


# --- buckets --------------------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["template_dict", "variant_template_dict"])
def test_every_bucket_is_private_encrypted_and_ssl_only(which, request):
    tpl = request.getfixturevalue(which)
    policies = {p["Properties"]["Bucket"]["Ref"]: p["Properties"]["PolicyDocument"]
                for p in of_type(tpl, "AWS::S3::BucketPolicy").values()}
    for lid, bucket in of_type(tpl, "AWS::S3::Bucket").items():
        props = bucket["Properties"]
        assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"], lid
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True, "BlockPublicPolicy": True, "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }, lid
        assert ssl_deny(policies[lid]), f"{lid} lacks the SSL-only statement"
        assert bucket["DeletionPolicy"] == "Retain", lid
        # Versioned, with superseded versions expiring, and tagged as holding a template-owned policy.
        assert props["VersioningConfiguration"] == {"Status": "Enabled"}, lid
        assert any(r.get("NoncurrentVersionExpiration") == {"NoncurrentDays": 30}
                   for r in props["LifecycleConfiguration"]["Rules"]), lid
        assert OWNER_TAG in props["Tags"], lid
        if not lid.startswith("AccessLogs"):
            assert props["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": one(tpl, "AWS::S3::Bucket", "AccessLogs")[0]}


def test_new_source_bucket_logs_access_and_grants_cross_account_reads_by_prefix(template_dict):
    lid, bucket = one(template_dict, "AWS::S3::Bucket", "SourceBucket")
    assert bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    _, policy = one(template_dict, "AWS::S3::BucketPolicy", "SourceBucketPolicy")
    reads = {s["Sid"]: s for s in statements(policy["Properties"]["PolicyDocument"]) if s["Effect"] == "Allow"}
    assert set(reads) == {"CrossAccountReadIngest", "CrossAccountReadAnalytics"}
    # Roles, never an account root: cdk.json lists a role for each consumer's account.
    assert reads["CrossAccountReadIngest"]["Principal"] == {"AWS": "arn:aws:iam::123456789012:role/ingest-reader"}
    assert join_text(reads["CrossAccountReadIngest"]["Resource"]) == f"<{lid}.Arn>/*"
    assert reads["CrossAccountReadAnalytics"]["Principal"] == {"AWS": "arn:aws:iam::210987654321:role/analytics-reader"}
    assert join_text(reads["CrossAccountReadAnalytics"]["Resource"]) == f"<{lid}.Arn>/analytics/*"
    for s in reads.values():
        assert sorted(as_list(s["Action"])) == ["s3:GetObject", "s3:GetObjectVersion"]
        assert "Condition" not in s


def test_imported_bucket_statements_grant_an_account_only_under_its_conditions(variant_template_dict):
    text = join_text(variant_template_dict["Outputs"]["SourceBucketPolicyStatements"]["Value"])
    reads = {s["Sid"]: s for s in json.loads(text)}
    ingest = reads["CrossAccountReadIngest"]
    assert ingest["Principal"] == {"AWS": "arn:aws:iam::123456789012:root"}
    assert ingest["Condition"] == {"ArnLike": {"aws:PrincipalArn": ["arn:aws:iam::123456789012:role/ingest-*"]},
                                   "StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}}
    # Only what S3 notifies for: the event filter's prefix and suffix.
    assert ingest["Resource"] == "arn:<AWS::Partition>:s3:::acme-landing-zone/incoming/*.json"
    raw = reads["CrossAccountReadRawEvents"]
    assert raw["Principal"] == {"AWS": "arn:aws:iam::210987654321:role/raw-reader"} and "Condition" not in raw
    assert raw["Resource"] == "arn:<AWS::Partition>:s3:::acme-landing-zone/incoming/raw/*.json"


def test_checkpoint_lifecycle_never_expires_live_objects(template_dict, variant_template_dict):
    for tpl in (template_dict, variant_template_dict):
        _, bucket = one(tpl, "AWS::S3::Bucket", "CheckpointsBucket")
        props = bucket["Properties"]
        assert props["VersioningConfiguration"] == {"Status": "Enabled"}
        for rule in props["LifecycleConfiguration"]["Rules"]:
            assert not {"ExpirationInDays", "ExpirationDate", "Transitions", "Transition"} & set(rule), rule
            assert "ExpiredObjectDeleteMarker" not in rule
        assert props["LifecycleConfiguration"]["Rules"][0]["NoncurrentVersionExpiration"] == {"NoncurrentDays": 30}


def test_artifacts_lifecycle_only_expires_monitoring_logs(template_dict):
    _, bucket = one(template_dict, "AWS::S3::Bucket", "ArtifactsBucket")
    for rule in bucket["Properties"]["LifecycleConfiguration"]["Rules"]:
        if "ExpirationInDays" in rule:
            assert rule["Prefix"] == "emr-logs/"
    # Job code is versioned: what a run used can be recovered after an overwrite.
    assert bucket["Properties"]["VersioningConfiguration"] == {"Status": "Enabled"}


def test_customer_key_encrypts_checkpoints_and_artifacts(variant_template_dict):
    key_lid, _ = one(variant_template_dict, "AWS::KMS::Key", "Key")
    for name in ("CheckpointsBucket", "ArtifactsBucket"):
        _, bucket = one(variant_template_dict, "AWS::S3::Bucket", name)
        sse = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
        assert sse["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "aws:kms", "KMSMasterKeyID": getatt(key_lid)}
        assert sse["BucketKeyEnabled"] is True
    # Access logs can only be delivered to an SSE-S3 bucket.
    _, logs = one(variant_template_dict, "AWS::S3::Bucket", "AccessLogs")
    assert logs["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}


# --- notifications and topic ----------------------------------------------------------------------

def test_new_bucket_notifies_the_topic_on_every_object_created(template_dict):
    topic_lid, _ = one(template_dict, "AWS::SNS::Topic", "FanOutTopic")
    bucket_lid, _ = one(template_dict, "AWS::S3::Bucket", "SourceBucket")
    policy_lid, _ = one(template_dict, "AWS::SNS::TopicPolicy", "FanOutTopicPolicy")
    _, res = one(template_dict, "Custom::S3BucketNotifications", "SourceBucketNotifications")
    props = res["Properties"]
    assert props["BucketName"] == {"Ref": bucket_lid}
    assert props["Managed"] is True
    assert props["NotificationConfiguration"] == {"TopicConfigurations": [
        {"Events": ["s3:ObjectCreated:*"], "TopicArn": {"Ref": topic_lid}},
    ]}
    # S3 checks its permission to publish when the configuration is written.
    assert policy_lid in res["DependsOn"]


def test_imported_bucket_merges_notifications_with_filters(variant_template_dict):
    topic_lid, _ = one(variant_template_dict, "AWS::SNS::Topic", "FanOutTopic")
    _, res = one(variant_template_dict, "Custom::S3BucketNotifications", "SourceBucketNotifications")
    props = res["Properties"]
    assert props["BucketName"] == "acme-landing-zone"
    # Managed false: CDK's handler keeps the bucket's other notification configurations.
    assert props["Managed"] is False
    assert props["NotificationConfiguration"] == {"TopicConfigurations": [{
        "Events": ["s3:ObjectCreated:*"],
        "TopicArn": {"Ref": topic_lid},
        "Filter": {"Key": {"FilterRules": [
            {"Name": "suffix", "Value": ".json"}, {"Name": "prefix", "Value": "incoming/"},
        ]}},
    }]}


@pytest.mark.parametrize("which", ["template_dict", "variant_template_dict"])
def test_topic_is_ssl_only_and_only_the_source_bucket_may_publish(which, request):
    tpl = request.getfixturevalue(which)
    topic_lid, _ = one(tpl, "AWS::SNS::Topic", "FanOutTopic")
    _, policy = one(tpl, "AWS::SNS::TopicPolicy", "FanOutTopicPolicy")
    doc = policy["Properties"]["PolicyDocument"]
    assert policy["Properties"]["Topics"] == [{"Ref": topic_lid}]
    assert ssl_deny(doc)
    allows = [s for s in statements(doc) if s["Effect"] == "Allow"]
    assert len(allows) == 1
    allow = allows[0]
    assert allow["Principal"] == {"Service": "s3.amazonaws.com"}
    assert allow["Action"] == "sns:Publish"
    source_arn = allow["Condition"]["ArnLike"]["aws:SourceArn"]
    if which == "template_dict":
        assert source_arn == getatt(one(tpl, "AWS::S3::Bucket", "SourceBucket")[0])
    else:
        assert join_text(source_arn) == "arn:<AWS::Partition>:s3:::acme-landing-zone"
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}


@pytest.mark.parametrize("which, key_prefix", [("template_dict", "TopicKey"), ("variant_template_dict", "Key")])
def test_topic_is_encrypted_with_a_customer_managed_key(which, key_prefix, request):
    """Always: S3 cannot publish to a topic under the AWS-managed SNS key. Default mode gives the topic a
    key of its own; customer mode uses the stack's one key."""
    tpl = request.getfixturevalue(which)
    key_lid, key = one(tpl, "AWS::KMS::Key", key_prefix)
    _, topic = one(tpl, "AWS::SNS::Topic", "FanOutTopic")
    assert topic["Properties"]["KmsMasterKeyId"] == getatt(key_lid)
    assert OWNER_TAG in topic["Properties"]["Tags"] and OWNER_TAG in key["Properties"]["Tags"]
    assert key["Properties"]["EnableKeyRotation"] is True and key["DeletionPolicy"] == "Retain"
    by_sid = {s.get("Sid"): s for s in statements(key["Properties"]["KeyPolicy"])}
    s3_use = by_sid["AllowSourceBucketNotifications"]
    assert s3_use["Principal"] == {"Service": "s3.amazonaws.com"}
    assert s3_use["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    # SNS needs the key only to deliver to queues the same key encrypts.
    assert ("AllowFanOutTopicDelivery" in by_sid) == (which == "variant_template_dict")
    if which == "template_dict":
        # None: the account's own administration. The alarm topic is under this key too.
        assert set(by_sid) == {None, "AllowSourceBucketNotifications", "AllowStackAlarmsToNotify"}


# --- consumers ------------------------------------------------------------------------------------

CONSUMERS = {
    # name: (construct id, prefix, maxReceiveCount, visibility timeout, principals)
    "template_dict": {
        "ingest": ("Ingest", "", 5, 300, ["arn:aws:iam::123456789012:role/ingest-reader"]),
        "analytics": ("Analytics", "analytics/", 3, 600, ["arn:aws:iam::210987654321:role/analytics-reader"]),
    },
    "variant_template_dict": {
        "ingest": ("Ingest", "", 2, 60, ["arn:aws:iam::123456789012:root"]),
        "raw-events": ("RawEvents", "incoming/raw/", 4, 300, ["arn:aws:iam::210987654321:role/raw-reader"]),
    },
}
# The conditions every statement of a consumer's grant carries: only the account granted as a whole has any.
GRANT_CONDITIONS = {
    ("variant_template_dict", "ingest"): {
        "ArnLike": {"aws:PrincipalArn": ["arn:aws:iam::123456789012:role/ingest-*"]},
        "StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"},
    },
}
CASES = [(which, name) for which, consumers in CONSUMERS.items() for name in consumers]


@pytest.mark.parametrize("which, name", CASES)
def test_consumer_queue_and_dlq(which, name, request):
    tpl = request.getfixturevalue(which)
    cid, _, max_receive, visibility, _ = CONSUMERS[which][name]
    q_lid, queue = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}Queue")
    d_lid, dlq = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}DeadLetterQueue")
    q, d = queue["Properties"], dlq["Properties"]
    assert q["RedrivePolicy"] == {"deadLetterTargetArn": getatt(d_lid), "maxReceiveCount": max_receive}
    assert q["VisibilityTimeout"] == visibility
    assert d["MessageRetentionPeriod"] > q["MessageRetentionPeriod"]
    # A fixed name lets the DLQ and the key policy name the queue; the DLQ outlives the stack and takes
    # messages only from this queue.
    assert q["QueueName"] == f"S3SqsStreaming-{name}"
    queue_arn = f"arn:<AWS::Partition>:sqs:<AWS::Region>:<AWS::AccountId>:S3SqsStreaming-{name}"
    assert dlq["DeletionPolicy"] == "Retain" and queue["DeletionPolicy"] == "Delete"
    allow = d["RedriveAllowPolicy"]
    assert allow["redrivePermission"] == "byQueue" and [join_text(a) for a in allow["sourceQueueArns"]] == [queue_arn]
    assert OWNER_TAG in q["Tags"] and OWNER_TAG in d["Tags"]
    for props in (q, d):
        if which == "template_dict":
            assert props["SqsManagedSseEnabled"] is True
        else:
            assert props["KmsMasterKeyId"] == getatt(one(tpl, "AWS::KMS::Key", "Key")[0])


@pytest.mark.parametrize("which, name", CASES)
def test_consumer_subscription_raw_with_body_filter_only_where_prefixed(which, name, request):
    tpl = request.getfixturevalue(which)
    cid, prefix, *_ = CONSUMERS[which][name]
    q_lid, _ = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}Queue")
    topic_lid, _ = one(tpl, "AWS::SNS::Topic", "FanOutTopic")
    subs = [s["Properties"] for s in of_type(tpl, "AWS::SNS::Subscription").values()
            if s["Properties"]["Endpoint"] == getatt(q_lid)]
    assert len(subs) == 1
    sub = subs[0]
    assert sub["Protocol"] == "sqs" and sub["TopicArn"] == {"Ref": topic_lid}
    assert sub["RawMessageDelivery"] is True
    if prefix:
        assert sub["FilterPolicyScope"] == "MessageBody"
        assert sub["FilterPolicy"] == {"Records": {"s3": {"object": {"key": [{"prefix": prefix}]}}}}
    else:
        assert "FilterPolicy" not in sub and "FilterPolicyScope" not in sub


@pytest.mark.parametrize("which, name", CASES)
def test_consumer_queue_policy(which, name, request):
    tpl = request.getfixturevalue(which)
    cid, _, _, _, principals = CONSUMERS[which][name]
    q_lid, _ = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}Queue")
    topic_lid, _ = one(tpl, "AWS::SNS::Topic", "FanOutTopic")
    _, policy = one(tpl, "AWS::SQS::QueuePolicy", f"Consumer{cid}QueuePolicy")
    assert policy["Properties"]["Queues"] == [{"Ref": q_lid}]
    doc = policy["Properties"]["PolicyDocument"]
    assert ssl_deny(doc)
    allows = [s for s in statements(doc) if s["Effect"] == "Allow"]
    assert len(allows) == 2
    topic = next(s for s in allows if s["Principal"] == {"Service": "sns.amazonaws.com"})
    assert topic["Action"] == "sqs:SendMessage"
    assert topic["Condition"] == {"ArnEquals": {"aws:SourceArn": {"Ref": topic_lid}}}
    consumer = next(s for s in allows if s.get("Sid") == "AllowConsumerAccount")
    assert sorted(as_list(consumer["Principal"]["AWS"])) == principals
    assert consumer.get("Condition") == GRANT_CONDITIONS.get((which, name))
    assert sorted(consumer["Action"]) == ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage",
                                          "sqs:GetQueueAttributes", "sqs:ReceiveMessage"]
    assert consumer["Resource"] == getatt(q_lid)


@pytest.mark.parametrize("which, name", CASES)
def test_consumer_alarms(which, name, request):
    tpl = request.getfixturevalue(which)
    cid, *_ = CONSUMERS[which][name]
    dlq_threshold, age_threshold = (1, 900) if which == "template_dict" else (3, 600)
    q_lid, _ = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}Queue")
    d_lid, _ = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}DeadLetterQueue")
    _, dlq_alarm = one(tpl, "AWS::CloudWatch::Alarm", f"Consumer{cid}DlqMessagesAlarm")
    _, age_alarm = one(tpl, "AWS::CloudWatch::Alarm", f"Consumer{cid}OldestMessageAgeAlarm")
    for alarm, metric, queue, threshold in (
        (dlq_alarm, "ApproximateNumberOfMessagesVisible", d_lid, dlq_threshold),
        (age_alarm, "ApproximateAgeOfOldestMessage", q_lid, age_threshold),
    ):
        p = alarm["Properties"]
        assert (p["Namespace"], p["MetricName"]) == ("AWS/SQS", metric)
        assert p["Dimensions"] == [{"Name": "QueueName", "Value": getatt(queue, "QueueName")}]
        assert p["Threshold"] == threshold
        assert p["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"


def test_key_policy_pins_each_consumer_and_the_log_groups(variant_template_dict):
    """Consumers may decrypt only through SQS and only their own queue's messages; CloudWatch Logs may use
    the key only for the consumers' log groups."""
    _, key = one(variant_template_dict, "AWS::KMS::Key", "Key")
    by_sid = {s.get("Sid"): s for s in statements(key["Properties"]["KeyPolicy"])}
    for name, (cid, _, _, _, principals) in CONSUMERS["variant_template_dict"].items():
        s = by_sid[f"AllowConsumer{cid}Decrypt"]
        assert s["Action"] == "kms:Decrypt" and sorted(as_list(s["Principal"]["AWS"])) == principals
        cond = json.loads(json.dumps(s["Condition"]))
        equals = cond.pop("StringEquals")
        assert join_text(equals.pop("kms:ViaService")) == "sqs.<AWS::Region>.amazonaws.com"
        assert join_text(equals.pop("kms:EncryptionContext:aws:sqs:arn")) == \
            f"arn:<AWS::Partition>:sqs:<AWS::Region>:<AWS::AccountId>:S3SqsStreaming-{name}"
        if equals:
            cond["StringEquals"] = equals
        assert cond == GRANT_CONDITIONS.get(("variant_template_dict", name), {})
    logs = by_sid["AllowCloudWatchLogs"]
    arns = [join_text(a) for a in logs["Condition"]["StringEquals"]["kms:EncryptionContext:aws:logs:arn"]]
    assert arns == [f"arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:/s3sqs/S3SqsStreaming/{n}"
                    for n in CONSUMERS["variant_template_dict"]]


# --- alarms, alarm topic, dashboards --------------------------------------------------------------

ALARM_SETTINGS = {  # (period, evaluation periods, quarantined-files and malformed-rows thresholds), from each
    "template_dict": (300, 1, 1, CDK_JSON_ALARMS["malformedRowsThreshold"]),  # context's `alarms`
    "variant_template_dict": (60, 2, 5, 250),
}
ALARM_SOURCE_ARN = "arn:<AWS::Partition>:cloudwatch:<AWS::Region>:<AWS::AccountId>:alarm:S3SqsStreaming-*"
FROM_STACK_ALARMS = {"ArnLike": {"aws:SourceArn": ALARM_SOURCE_ARN},
                     "StringEquals": {"aws:SourceAccount": "<AWS::AccountId>"}}


def rendered(condition: dict) -> dict:
    return {op: {k: join_text(v) for k, v in keys.items()} for op, keys in condition.items()}


@pytest.mark.parametrize("which, key_prefix", [("template_dict", "TopicKey"), ("variant_template_dict", "Key")])
def test_alarm_topic_is_encrypted_ssl_only_and_only_this_stacks_alarms_may_publish(which, key_prefix, request):
    tpl = request.getfixturevalue(which)
    key_lid, key = one(tpl, "AWS::KMS::Key", key_prefix)
    topic_lid, topic = one(tpl, "AWS::SNS::Topic", "AlarmsTopic")
    assert topic["Properties"]["KmsMasterKeyId"] == getatt(key_lid)  # the stack's customer-managed key
    assert OWNER_TAG in topic["Properties"]["Tags"]
    _, policy = one(tpl, "AWS::SNS::TopicPolicy", "AlarmsTopicPolicy")
    assert policy["Properties"]["Topics"] == [{"Ref": topic_lid}]
    doc = policy["Properties"]["PolicyDocument"]
    assert ssl_deny(doc)
    (allow,) = [s for s in statements(doc) if s["Effect"] == "Allow"]
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allow["Action"] == "sns:Publish" and allow["Resource"] == {"Ref": topic_lid}
    assert rendered(allow["Condition"]) == FROM_STACK_ALARMS
    # CloudWatch encrypts what it publishes with the topic's key: allowed for the same alarms only.
    use = {s.get("Sid"): s for s in statements(key["Properties"]["KeyPolicy"])}["AllowStackAlarmsToNotify"]
    assert use["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert sorted(as_list(use["Action"])) == ["kms:Decrypt", "kms:GenerateDataKey*"]
    assert rendered(use["Condition"]) == FROM_STACK_ALARMS


@pytest.mark.parametrize("which", ["template_dict", "variant_template_dict"])
def test_every_alarm_notifies_the_alarm_topic_and_falls_under_its_policy(which, request):
    tpl = request.getfixturevalue(which)
    period, evaluations, *_ = ALARM_SETTINGS[which]
    topic = {"Ref": one(tpl, "AWS::SNS::Topic", "AlarmsTopic")[0]}
    alarms = {a["Properties"]["AlarmName"]: a["Properties"] for a in of_type(tpl, "AWS::CloudWatch::Alarm").values()}
    expected = {"S3SqsStreaming-failed-job-runs"} | {
        f"S3SqsStreaming-{name}-{what}" for name in CONSUMERS[which]
        for what in ("dlq-messages", "oldest-message-age", "quarantined-files", "malformed-rows", "query-failures")}
    assert set(alarms) == expected
    for name, p in alarms.items():
        # The topic policy lets alarms named S3SqsStreaming-* publish: every alarm here is one of them.
        assert fnmatch.fnmatchcase(f"{ALARM_SOURCE_ARN.rsplit(':', 1)[0]}:{name}", ALARM_SOURCE_ARN), name
        assert p["AlarmActions"] == p["OKActions"] == [topic], name  # when it fires and when it clears
        assert p["ComparisonOperator"] == "GreaterThanOrEqualToThreshold", name
        assert p["TreatMissingData"] == "notBreaching", name
        assert p["EvaluationPeriods"] == evaluations, name
        assert p.get("Period", p.get("Metrics", [{}])[0].get("Period")) == period, name


@pytest.mark.parametrize("which, name", CASES)
def test_alarms_on_the_jobs_metrics_per_consumer(which, name, request):
    """Quarantined files, malformed rows and failed queries come from the EMF lines the job logs
    (s3sqs.job.metrics), under the consumer's queue name; the thresholds from cdk.json's `alarms`."""
    tpl = request.getfixturevalue(which)
    cid, *_ = CONSUMERS[which][name]
    _, _, quarantined, malformed = ALARM_SETTINGS[which]
    q_lid, _ = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}Queue")
    for alarm_id, metric, threshold in (("QuarantinedFilesAlarm", job_metrics.QUARANTINED, quarantined),
                                        ("MalformedRowsAlarm", job_metrics.MALFORMED, malformed),
                                        ("QueryFailuresAlarm", job_metrics.QUERY_FAILURES, 1)):
        _, alarm = one(tpl, "AWS::CloudWatch::Alarm", f"Monitoring{cid}{alarm_id}")
        p = alarm["Properties"]
        assert (p["Namespace"], p["MetricName"], p["Statistic"]) == (job_metrics.NAMESPACE, metric, "Sum")
        assert p["Dimensions"] == [{"Name": job_metrics.DIMENSION, "Value": getatt(q_lid, "QueueName")}]
        assert p["Threshold"] == threshold


@pytest.mark.parametrize("which", ["template_dict", "variant_template_dict"])
def test_failed_job_runs_alarm_covers_every_series_emr_publishes_for_the_application(which, request):
    tpl = request.getfixturevalue(which)
    app_lid, _ = one(tpl, "AWS::EMRServerless::Application", "SparkApplication")
    _, alarm = one(tpl, "AWS::CloudWatch::Alarm", "FailedJobRunsAlarm")
    (query,) = alarm["Properties"]["Metrics"]
    assert join_text(query["Expression"]) == \
        f"SELECT MAX(FailedJobs) FROM \"AWS/EMRServerless\" WHERE ApplicationId = '<{app_lid}.ApplicationId>'"
    assert query["ReturnData"] is True and alarm["Properties"]["Threshold"] == 1


def dashboard_metrics(body: dict) -> tuple[set, list]:
    """(namespace, metric name, dimension value) of every metric graphed, and the alarm status widgets' alarms."""
    graphed, alarms = set(), []
    for widget in body["widgets"]:
        props = widget["properties"]
        alarms += props.get("alarms", [])
        for row in props.get("metrics", []):
            if isinstance(row[0], dict):
                graphed.add(("expression", row[0]["expression"], None))
                continue
            namespace, metric, *rest = [x for x in row if not isinstance(x, dict)]
            graphed.add((namespace, metric, rest[1] if rest else None))
    return graphed, alarms


@pytest.mark.parametrize("which, name", CASES)
def test_one_dashboard_per_consumer_charts_every_metric_the_job_reports(which, name, request):
    tpl = request.getfixturevalue(which)
    cid, *_ = CONSUMERS[which][name]
    q_lid, _ = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}Queue")
    d_lid, _ = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}DeadLetterQueue")
    app_lid, _ = one(tpl, "AWS::EMRServerless::Application", "SparkApplication")
    _, dashboard = one(tpl, "AWS::CloudWatch::Dashboard", f"Monitoring{cid}Dashboard")
    assert dashboard["Properties"]["DashboardName"] == f"S3SqsStreaming-{name}"
    body = json.loads(join_text(dashboard["Properties"]["DashboardBody"]))
    graphed, alarms = dashboard_metrics(body)
    queue = f"<{q_lid}.QueueName>"
    job = {(n, m, v) for n, m, v in graphed if n == job_metrics.NAMESPACE}
    assert job == {(job_metrics.NAMESPACE, m, queue) for m in [*job_metrics.BATCH_METRICS, job_metrics.QUERY_FAILURES]}
    assert {(n, m, v) for n, m, v in graphed if n == "AWS/SQS"} == {
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible", queue),
        ("AWS/SQS", "ApproximateNumberOfMessagesNotVisible", queue),
        ("AWS/SQS", "ApproximateAgeOfOldestMessage", queue),
        ("AWS/SQS", "ApproximateNumberOfMessagesVisible", f"<{d_lid}.QueueName>")}
    assert ("expression", f"SELECT MAX(FailedJobs) FROM \"AWS/EMRServerless\" WHERE ApplicationId = "
                          f"'<{app_lid}.ApplicationId>'", None) in graphed
    # The alarm status row: this consumer's five alarms and the application's.
    alarm_lids = {lid for lid in of_type(tpl, "AWS::CloudWatch::Alarm")
                  if lid.startswith((f"Consumer{cid}", f"Monitoring{cid}", "FailedJobRuns"))}
    assert sorted(alarms) == sorted(f"<{lid}.Arn>" for lid in alarm_lids) and len(alarms) == 6


def test_alarm_emails_subscribe_to_the_alarm_topic_each_under_a_name_of_its_own(template_dict, variant_template_dict):
    emails = VARIANT_CONTEXT["alarms"]["emails"]
    topic = {"Ref": one(variant_template_dict, "AWS::SNS::Topic", "AlarmsTopic")[0]}
    subs = {lid: s["Properties"] for lid, s in of_type(variant_template_dict, "AWS::SNS::Subscription").items()
            if s["Properties"]["Protocol"] == "email"}
    assert sorted(p["Endpoint"] for p in subs.values()) == sorted(emails)
    assert all(p["TopicArn"] == topic for p in subs.values())
    # Named after the address (case-folded), not its place in the list: editing the list leaves the others be.
    assert sorted(lid[:len("AlarmsEmail") + 10] for lid in subs) == sorted(
        "AlarmsEmail" + hashlib.sha256(e.lower().encode()).hexdigest()[:10].upper() for e in emails)
    assert not [s for s in of_type(template_dict, "AWS::SNS::Subscription").values()
                if s["Properties"]["Protocol"] == "email"]


# --- job roles ------------------------------------------------------------------------------------

@pytest.mark.parametrize("which, name", CASES)
def test_job_role_is_least_privilege_and_written_out(which, name, request):
    tpl = request.getfixturevalue(which)
    cid, prefix, *_ = CONSUMERS[which][name]
    variant = which == "variant_template_dict"
    app_lid, _ = one(tpl, "AWS::EMRServerless::Application", "SparkApplication")
    q_lid, _ = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}Queue")
    ckpt = one(tpl, "AWS::S3::Bucket", "CheckpointsBucket")[0]
    artifacts = one(tpl, "AWS::S3::Bucket", "ArtifactsBucket")[0]
    logs = one(tpl, "AWS::Logs::LogGroup", f"JobLogs{cid}")[0]
    _, role = one(tpl, "AWS::IAM::Role", f"JobRole{cid}Role")
    props = role["Properties"]
    assert "ManagedPolicyArns" not in props
    trust = statements(props["AssumeRolePolicyDocument"])
    assert trust == [{
        "Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "emr-serverless.amazonaws.com"},
        "Condition": {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}},
                      "ArnLike": {"aws:SourceArn": getatt(app_lid)}},
    }]
    # No separate AWS::IAM::Policy may widen the role.
    for policy in of_type(tpl, "AWS::IAM::Policy").values():
        assert {"Ref": f"JobRole{cid}"} not in policy["Properties"]["Roles"]
    (policy,) = props["Policies"]
    by_sid = {s["Sid"]: s for s in statements(policy["PolicyDocument"])}
    for s in by_sid.values():
        assert s["Effect"] == "Allow"
        assert all(not a.endswith("*") for a in as_list(s["Action"])), s
        # Only an action without a resource type (the Service Authorization Reference) names "*".
        assert "*" not in as_list(s["Resource"]) or as_list(s["Action"]) == ["logs:DescribeLogGroups"], s

    if variant:
        source = "arn:<AWS::Partition>:s3:::acme-landing-zone"
        read_pattern = f"{prefix or 'incoming/'}*.json"
    else:
        source = f"<{one(tpl, 'AWS::S3::Bucket', 'SourceBucket')[0]}.Arn>"
        read_pattern = f"{prefix}*"
    expected = {
        "ReadSourceObjects": (["s3:GetObject", "s3:GetObjectVersion"], [f"{source}/{read_pattern}"]),
        "ReadWriteCheckpointAndOutput": (
            ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:PutObject"],
            [f"<{ckpt}.Arn>/checkpoints/{name}/*", f"<{ckpt}.Arn>/output/{name}/*"]),
        "ListCheckpointAndOutput": (["s3:ListBucket"], [f"<{ckpt}.Arn>"]),
        "ListSourcePrefix": (["s3:ListBucket"], [source]),
        # Each consumer's own job code, logs and log group: nothing another consumer's role may touch.
        "ReadJobArtifacts": (["s3:GetObject"], [f"<{artifacts}.Arn>/jobs/{name}/*"]),
        "WriteMonitoringLogs": (["s3:PutObject"], [f"<{artifacts}.Arn>/emr-logs/{name}/*"]),
        "ConsumeOwnQueue": (["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
                             "sqs:GetQueueUrl", "sqs:ReceiveMessage"], [f"<{q_lid}.Arn>"]),
        "FindLogGroup": (["logs:DescribeLogGroups"], ["*"]),
        "WriteJobLogs": (["logs:CreateLogStream", "logs:DescribeLogStreams", "logs:PutLogEvents"], sorted([
            f"arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:<{logs}>",
            f"arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:<{logs}>:log-stream:*"])),
    }
    if variant:  # the key through S3 and SQS only, for this consumer's buckets and queue (tests/iam evaluates it)
        key = one(tpl, "AWS::KMS::Key", "Key")[0]
        expected["UseStackKeyThroughS3"] = (["kms:Decrypt", "kms:GenerateDataKey"], [f"<{key}.Arn>"])
        expected["UseStackKeyThroughSqs"] = (["kms:Decrypt"], [f"<{key}.Arn>"])
    if variant and name == "raw-events":  # the only consumer that asks for Iceberg tables in Glue
        glue = "arn:<AWS::Partition>:glue:<AWS::Region>:<AWS::AccountId>"
        expected["UseIcebergGlueDatabase"] = (
            ["glue:CreateDatabase", "glue:CreateTable", "glue:GetDatabase", "glue:GetTable", "glue:UpdateTable"],
            sorted([f"{glue}:catalog", f"{glue}:database/raw_lake", f"{glue}:table/raw_lake/*"]))
    assert set(by_sid) == set(expected)
    # Metrics travel as EMF lines in its own log group: no cloudwatch:* (PutMetricData) at all.
    assert not [a for s in by_sid.values() for a in as_list(s["Action"]) if a.startswith("cloudwatch:")]
    for sid, (actions, resources) in expected.items():
        s = by_sid[sid]
        assert sorted(as_list(s["Action"])) == actions, sid
        assert sorted(join_text(r) for r in as_list(s["Resource"])) == sorted(resources), sid
    # Folder prefixes, each ending in "/": consumer "ingest" lists nothing of "ingest-v2".
    assert by_sid["ListCheckpointAndOutput"]["Condition"] == {"StringLike": {"s3:prefix": [
        f"checkpoints/{name}/*", f"output/{name}/*"]}}
    read_prefix = read_pattern.split("*", 1)[0]
    assert by_sid["ListSourcePrefix"].get("Condition") == (
        {"StringLike": {"s3:prefix": [f"{read_prefix}*"]}} if read_prefix else None)


# --- EMR ------------------------------------------------------------------------------------------

def test_emr_application(template, template_dict):
    template.has_resource_properties("AWS::EMRServerless::Application", {
        "Type": "SPARK",
        "ReleaseLabel": "emr-spark-8.0.0",
        "Architecture": "X86_64",
        "AutoStartConfiguration": {"Enabled": True},
        "AutoStopConfiguration": {"Enabled": True, "IdleTimeoutMinutes": 15},
        "MaximumCapacity": {"Cpu": "16 vCPU", "Memory": "64 GB", "Disk": "200 GB"},
    })
    # No application-wide log destination: each run logs to its consumer's prefix and group (submit-job).
    _, app = one(template_dict, "AWS::EMRServerless::Application", "SparkApplication")
    assert "MonitoringConfiguration" not in app["Properties"]


@pytest.mark.parametrize("which", ["template_dict", "variant_template_dict"])
def test_one_log_group_per_consumer(which, request):
    tpl = request.getfixturevalue(which)
    key = one(tpl, "AWS::KMS::Key", "Key")[0] if which == "variant_template_dict" else None
    for name, (cid, *_) in CONSUMERS[which].items():
        _, group = one(tpl, "AWS::Logs::LogGroup", f"JobLogs{cid}")
        props = group["Properties"]
        assert props["LogGroupName"] == f"/s3sqs/S3SqsStreaming/{name}"
        assert props["RetentionInDays"] == 30 and group["DeletionPolicy"] == "Retain"
        assert props.get("KmsKeyId") == (getatt(key) if key else None)


def test_emr_application_variant_settings(variant_template):
    variant_template.has_resource_properties("AWS::EMRServerless::Application", {
        "Architecture": "ARM64",
        "AutoStopConfiguration": {"Enabled": True, "IdleTimeoutMinutes": 5},
        "MaximumCapacity": {"Cpu": "8 vCPU", "Memory": "32 GB", "Disk": "100 GB"},
    })


# --- outputs --------------------------------------------------------------------------------------

def test_outputs_cover_what_the_operator_scripts_read(template_dict, variant_template_dict):
    outputs = template_dict["Outputs"]
    assert REQUIRED_OUTPUTS <= set(outputs)
    assert "KmsKeyArn" not in outputs and "SourceBucketPolicyStatements" not in outputs
    for name in ("Ingest", "Analytics"):
        assert {f"{name}QueueUrl", f"{name}DlqUrl"} <= set(outputs)
    variant = variant_template_dict["Outputs"]
    assert REQUIRED_OUTPUTS | {"KmsKeyArn", "SourceBucketPolicyStatements"} <= set(variant)
    assert variant["KmsKeyArn"]["Value"] == getatt(one(variant_template_dict, "AWS::KMS::Key", "Key")[0])
    assert variant["SourceBucketName"]["Value"] == "acme-landing-zone"


@pytest.mark.parametrize("which", ["template_dict", "variant_template_dict"])
def test_consumers_output_is_json_keyed_by_consumer(which, request):
    tpl = request.getfixturevalue(which)
    text = join_text(tpl["Outputs"]["Consumers"]["Value"])
    consumers = json.loads(text)
    assert set(consumers) == set(CONSUMERS[which])
    for name, (cid, prefix, *_) in CONSUMERS[which].items():
        c = consumers[name]
        assert set(CONSUMER_FIELDS) <= set(c)
        q_lid, _ = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}Queue")
        d_lid, _ = one(tpl, "AWS::SQS::Queue", f"Consumer{cid}DeadLetterQueue")
        r_lid, _ = one(tpl, "AWS::IAM::Role", f"JobRole{cid}Role")
        assert c["queueUrl"] == f"<{q_lid}>" and c["queueArn"] == f"<{q_lid}.Arn>"
        assert c["dlqUrl"] == f"<{d_lid}>" and c["dlqArn"] == f"<{d_lid}.Arn>"
        assert c["jobRoleArn"] == f"<{r_lid}.Arn>"
        assert c["prefix"] == prefix
        art = one(tpl, "AWS::S3::Bucket", "ArtifactsBucket")[0]
        assert c["artifactsUri"] == f"s3://<{art}>/jobs/{name}/" and c["logUri"] == f"s3://<{art}>/emr-logs/{name}/"
        assert c["logGroupName"] == f"<{one(tpl, 'AWS::Logs::LogGroup', f'JobLogs{cid}')[0]}>"
        assert c["dashboardName"] == f"S3SqsStreaming-{name}"
    assert tpl["Outputs"]["AlarmTopicArn"]["Value"] == {"Ref": one(tpl, "AWS::SNS::Topic", "AlarmsTopic")[0]}
