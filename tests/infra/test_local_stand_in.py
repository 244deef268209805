"""The synthesized template's wiring, live on a moto server: routing by prefix, DLQ after maxReceiveCount."""
from __future__ import annotations

import json
from urllib.parse import unquote_plus

import boto3
import pytest

from infra import STACK_NAME
from infra.contract import POLICY_OWNER_TAG
from infra.local_stand_in import deploy_to_moto, synth_template, write_outputs_file
from infra.stand_in import StandInError
from s3sqs.config.options import name_in_queue_url
from s3sqs.job import metrics as job_metrics
from ops.stack_outputs import StackOutputs, load_outputs
from tests.infra.conftest import CDK_JSON_ALARMS, VARIANT_CONTEXT


@pytest.fixture
def aws(moto_endpoint):
    return lambda service: boto3.client(service, endpoint_url=moto_endpoint, region_name="us-east-1")


@pytest.fixture
def deployed(moto_server):
    moto_server.reset()
    outputs = deploy_to_moto(synth_template(), moto_server.endpoint_url)
    yield StackOutputs(STACK_NAME, outputs)
    moto_server.reset()


def drain(sqs, url: str) -> list[str]:
    """Receive and delete everything on a queue; return the decoded object keys (test events skipped)."""
    keys: list[str] = []
    while True:
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
        if not messages:
            return sorted(keys)
        for m in messages:
            body = json.loads(m["Body"])
            # Raw delivery: the S3 event itself, not an SNS envelope.
            assert "Type" not in body or body.get("Type") != "Notification", body
            keys += [unquote_plus(r["s3"]["object"]["key"]) for r in body.get("Records", [])]
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


def test_outputs_have_the_stack_outputs_keys_and_name_real_resources(deployed, template_dict, aws, tmp_path):
    assert set(deployed.values) == set(template_dict["Outputs"])
    assert all(isinstance(v, str) for v in deployed.values.values())
    assert deployed.consumer_names() == ["analytics", "ingest"]
    sqs, iam = aws("sqs"), aws("iam")
    for name in deployed.consumer_names():
        c = deployed.consumer(name)
        attrs = sqs.get_queue_attributes(QueueUrl=c.queue_url, AttributeNames=["All"])["Attributes"]
        assert attrs["QueueArn"] == c.queue_arn
        assert json.loads(attrs["RedrivePolicy"])["deadLetterTargetArn"] == c.dlq_arn
        dlq = sqs.get_queue_attributes(QueueUrl=c.dlq_url, AttributeNames=["QueueArn"])["Attributes"]
        assert dlq["QueueArn"] == c.dlq_arn
        role = iam.get_role(RoleName=c.job_role_arn.rsplit("/", 1)[1])["Role"]
        assert role["Arn"] == c.job_role_arn
        assert iam.list_role_policies(RoleName=role["RoleName"])["PolicyNames"] == ["JobAccess"]
    assert deployed.consumer("analytics").prefix == "analytics/"
    assert deployed.consumer("ingest").prefix == ""
    aws("s3").head_bucket(Bucket=deployed.get("CheckpointBucketName"))
    aws("s3").head_bucket(Bucket=deployed.get("ArtifactsBucketName"))
    app = aws("emr-serverless").get_application(applicationId=deployed.get("EmrApplicationId"))["application"]
    assert app["type"].upper() == "SPARK" and app["tags"]["releaseLabel"] == "emr-spark-8.0.0"
    assert app["autoStopConfiguration"] == {"enabled": True, "idleTimeoutMinutes": 15}
    for name in deployed.consumer_names():
        c = deployed.consumer(name)
        assert c.log_group_name == f"/s3sqs/{STACK_NAME}/{name}"
        assert aws("logs").describe_log_groups(logGroupNamePrefix=c.log_group_name)["logGroups"]
        assert c.artifacts_uri == f"s3://{deployed.get('ArtifactsBucketName')}/jobs/{name}/"
        assert c.log_uri == f"s3://{deployed.get('ArtifactsBucketName')}/emr-logs/{name}/"

    path = write_outputs_file(deployed.values, tmp_path / "outputs.json", STACK_NAME)
    assert json.loads(path.read_text()) == {STACK_NAME: deployed.values}
    assert load_outputs(path).consumer("ingest") == deployed.consumer("ingest")


def test_moto_resources_carry_the_template_properties(deployed, template_dict, aws):
    resources = template_dict["Resources"]
    sqs, sns, s3 = aws("sqs"), aws("sns"), aws("s3")
    for name, cid in (("ingest", "Ingest"), ("analytics", "Analytics")):
        c = deployed.consumer(name)
        (queue,) = [r["Properties"] for lid, r in resources.items()
                    if r["Type"] == "AWS::SQS::Queue" and lid.startswith(f"Consumer{cid}Queue")]
        attrs = sqs.get_queue_attributes(QueueUrl=c.queue_url, AttributeNames=["All"])["Attributes"]
        assert int(attrs["VisibilityTimeout"]) == queue["VisibilityTimeout"]
        assert int(attrs["MessageRetentionPeriod"]) == queue["MessageRetentionPeriod"]
        assert json.loads(attrs["RedrivePolicy"])["maxReceiveCount"] == queue["RedrivePolicy"]["maxReceiveCount"]
        policy = json.loads(attrs["Policy"])
        assert any(s.get("Sid") == "AllowConsumerAccount" for s in policy["Statement"])
        # The tag onboarding reads to recognise a policy this template owns.
        assert sqs.list_queue_tags(QueueUrl=c.queue_url)["Tags"] == {POLICY_OWNER_TAG: STACK_NAME}

    topic_arn = deployed.get("TopicArn")
    subs = {s["Endpoint"]: s["SubscriptionArn"]
            for s in sns.list_subscriptions_by_topic(TopicArn=topic_arn)["Subscriptions"]}
    assert set(subs) == {deployed.consumer(n).queue_arn for n in ("ingest", "analytics")}
    analytics = sns.get_subscription_attributes(SubscriptionArn=subs[deployed.consumer("analytics").queue_arn])
    assert analytics["Attributes"]["RawMessageDelivery"] == "true"
    assert analytics["Attributes"]["FilterPolicyScope"] == "MessageBody"
    ingest = sns.get_subscription_attributes(SubscriptionArn=subs[deployed.consumer("ingest").queue_arn])
    assert "FilterPolicy" not in ingest["Attributes"]
    assert {"Key": POLICY_OWNER_TAG, "Value": STACK_NAME} in sns.list_tags_for_resource(ResourceArn=topic_arn)["Tags"]
    assert {"Key": POLICY_OWNER_TAG, "Value": STACK_NAME} in \
        s3.get_bucket_tagging(Bucket=deployed.get("SourceBucketName"))["TagSet"]
    topic_policy = json.loads(sns.get_topic_attributes(TopicArn=topic_arn)["Attributes"]["Policy"])
    assert {s.get("Sid") for s in topic_policy["Statement"]} >= {"AllowSourceBucketPublish"}

    notification = s3.get_bucket_notification_configuration(Bucket=deployed.get("SourceBucketName"))
    assert [(t["TopicArn"], t["Events"]) for t in notification["TopicConfigurations"]] == [
        (topic_arn, ["s3:ObjectCreated:*"])
    ]


def test_alarms_notify_the_alarm_topic_and_each_consumer_has_its_dashboard(deployed, aws):
    cloudwatch, sns = aws("cloudwatch"), aws("sns")
    topic_arn = deployed.get("AlarmTopicArn")
    attributes = sns.get_topic_attributes(TopicArn=topic_arn)["Attributes"]
    assert json.loads(attributes["Policy"])["Statement"][1]["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert attributes["KmsMasterKeyId"]  # under the topics' key
    alarms = {a["AlarmName"]: a for a in cloudwatch.describe_alarms(AlarmNamePrefix=STACK_NAME)["MetricAlarms"]}
    assert len(alarms) == 11
    for alarm in alarms.values():
        assert alarm["AlarmActions"] == alarm["OKActions"] == [topic_arn], alarm["AlarmName"]
    # The Metrics Insights alarm on EMR's FailedJobs names the application that was created.
    (query,) = alarms[f"{STACK_NAME}-failed-job-runs"]["Metrics"]
    assert query["Expression"].endswith(f"WHERE ApplicationId = '{deployed.get('EmrApplicationId')}'")
    for name in deployed.consumer_names():
        c = deployed.consumer(name)
        # The dimension the alarm watches is the one the job's EMF documents carry for this queue.
        for kind, metric in (("quarantined-files", job_metrics.QUARANTINED), ("malformed-rows", job_metrics.MALFORMED)):
            alarm = alarms[f"{STACK_NAME}-{name}-{kind}"]
            assert (alarm["Namespace"], alarm["MetricName"]) == (job_metrics.NAMESPACE, metric)
            assert alarm["Dimensions"] == [{"Name": job_metrics.DIMENSION, "Value": name_in_queue_url(c.queue_url)}]
        # The threshold cdk.json sets, as the template carries it.
        assert alarms[f"{STACK_NAME}-{name}-malformed-rows"]["Threshold"] == CDK_JSON_ALARMS["malformedRowsThreshold"]
        body = json.loads(cloudwatch.get_dashboard(DashboardName=c.dashboard_name)["DashboardBody"])
        text = json.dumps(body)
        assert name_in_queue_url(c.queue_url) in text and job_metrics.QUARANTINED in text
        assert deployed.get("EmrApplicationId") in text
    assert sorted(d["DashboardName"] for d in cloudwatch.list_dashboards()["DashboardEntries"]) == \
        sorted(deployed.consumer(n).dashboard_name for n in deployed.consumer_names())


def test_an_event_reaches_every_consumer_whose_filter_matches_and_no_other(deployed, aws):
    s3, sqs = aws("s3"), aws("sqs")
    bucket = deployed.get("SourceBucketName")
    keys = ["analytics/2026/11/21/part 1.csv", "landing/orders.csv", "analyticsX/not-a-prefix-match.csv"]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=b"id,total\n1,2\n")
    assert drain(sqs, deployed.consumer("ingest").queue_url) == sorted(keys)
    assert drain(sqs, deployed.consumer("analytics").queue_url) == ["analytics/2026/11/21/part 1.csv"]
    for name in ("ingest", "analytics"):
        assert drain(sqs, deployed.consumer(name).dlq_url) == []


def test_a_message_that_keeps_failing_lands_in_the_dlq_after_max_receive_count(deployed, aws, template_dict):
    s3, sqs = aws("s3"), aws("sqs")
    consumer = deployed.consumer("analytics")
    max_receive = json.loads(
        sqs.get_queue_attributes(QueueUrl=consumer.queue_url, AttributeNames=["RedrivePolicy"])
        ["Attributes"]["RedrivePolicy"]
    )["maxReceiveCount"]
    assert max_receive == 3  # cdk.json's example
    s3.put_object(Bucket=deployed.get("SourceBucketName"), Key="analytics/poison.csv", Body=b"\x00")

    receives = 0
    for _ in range(max_receive + 2):
        # A consumer that fails: receive, never delete, and let the message come straight back.
        got = sqs.receive_message(QueueUrl=consumer.queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0,
                                  WaitTimeSeconds=0,
                                  AttributeNames=["ApproximateReceiveCount"]).get("Messages", [])
        if not got:
            break
        receives += 1
        assert int(got[0]["Attributes"]["ApproximateReceiveCount"]) == receives
    assert receives == max_receive
    assert drain(sqs, consumer.dlq_url) == ["analytics/poison.csv"]
    assert drain(sqs, consumer.queue_url) == []
    # The other consumer's copy is independent of this consumer's failures.
    assert drain(sqs, deployed.consumer("ingest").queue_url) == ["analytics/poison.csv"]


def test_imported_bucket_with_customer_key_and_event_filters(moto_server, aws):
    moto_server.reset()
    try:
        s3, sqs = aws("s3"), aws("sqs")
        # The existing bucket already notifies someone else; the stack must keep that.
        s3.create_bucket(Bucket="acme-landing-zone")
        other = sqs.create_queue(QueueName="existing-consumer")["QueueUrl"]
        other_arn = sqs.get_queue_attributes(QueueUrl=other, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        s3.put_bucket_notification_configuration(Bucket="acme-landing-zone", NotificationConfiguration={
            "QueueConfigurations": [{"QueueArn": other_arn, "Events": ["s3:ObjectRemoved:*"]}],
        })

        out = StackOutputs(STACK_NAME, deploy_to_moto(synth_template(VARIANT_CONTEXT), moto_server.endpoint_url))
        assert out.get("SourceBucketName") == "acme-landing-zone"
        config = s3.get_bucket_notification_configuration(Bucket="acme-landing-zone")
        assert [q["QueueArn"] for q in config["QueueConfigurations"]] == [other_arn]
        assert [t["TopicArn"] for t in config["TopicConfigurations"]] == [out.get("TopicArn")]

        key = aws("kms").describe_key(KeyId=out.get("KmsKeyArn"))["KeyMetadata"]
        assert key["Arn"] == out.get("KmsKeyArn")

        statements = json.loads(out.get("SourceBucketPolicyStatements"))
        by_sid = {s["Sid"]: s for s in statements}
        assert by_sid["CrossAccountReadRawEvents"]["Principal"] == {"AWS": "arn:aws:iam::210987654321:role/raw-reader"}
        assert by_sid["CrossAccountReadRawEvents"]["Resource"] == "arn:aws:s3:::acme-landing-zone/incoming/raw/*.json"
        assert by_sid["CrossAccountReadIngest"]["Resource"] == "arn:aws:s3:::acme-landing-zone/incoming/*.json"

        # The alarm e-mails, subscribed on the alarm topic (moto sends no mail).
        subs = aws("sns").list_subscriptions_by_topic(TopicArn=out.get("AlarmTopicArn"))["Subscriptions"]
        assert sorted((s["Protocol"], s["Endpoint"]) for s in subs) == sorted(
            ("email", e) for e in VARIANT_CONTEXT["alarms"]["emails"])

        for k in ("incoming/raw/a.json", "incoming/raw/a.csv", "incoming/b.json", "other/c.json"):
            s3.put_object(Bucket="acme-landing-zone", Key=k, Body=b"{}")
        assert drain(sqs, out.consumer("ingest").queue_url) == ["incoming/b.json", "incoming/raw/a.json"]
        assert drain(sqs, out.consumer("raw-events").queue_url) == ["incoming/raw/a.json"]
    finally:
        moto_server.reset()


def test_a_resource_type_the_stand_in_does_not_know_fails_loudly(moto_endpoint):
    template = {"Resources": {"Table": {"Type": "AWS::DynamoDB::Table", "Properties": {}}}}
    with pytest.raises(StandInError, match="AWS::DynamoDB::Table"):
        deploy_to_moto(template, moto_endpoint)


def test_source_cleaning_on_deploys_its_role_and_schedule_and_skips_only_the_function(moto_server, aws):
    from tests.infra.conftest import SOURCE_CLEANING_CONTEXT
    moto_server.reset()
    try:
        out = StackOutputs(STACK_NAME, deploy_to_moto(synth_template(SOURCE_CLEANING_CONTEXT),
                                                      moto_server.endpoint_url))
        published = json.loads(out.get("SourceCleaning"))
        role = published["roleArn"].rsplit("/", 1)[-1]
        assert aws("iam").get_role(RoleName=role)["Role"]["Arn"] == published["roleArn"]  # source-state clean's role
        (rule,) = aws("events").list_rules()["Rules"]
        assert rule["ScheduleExpression"] == "rate(1 day)" == published["schedule"]
        (target,) = aws("events").list_targets_by_rule(Rule=rule["Name"])["Targets"]
        assert ":function:" in target["Arn"]
        alarms = aws("cloudwatch").describe_alarms(AlarmNamePrefix=f"{STACK_NAME}-source-cleaner")["MetricAlarms"]
        assert [a["Dimensions"][0]["Value"] for a in alarms] == [target["Arn"].rsplit(":", 1)[-1]]
    finally:
        moto_server.reset()
