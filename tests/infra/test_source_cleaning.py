"""The source cleaner in the stack: off (cdk.json's example), nothing is granted and nothing is published; on,
exactly one role may delete from the source bucket, scoped to what the consumers read, their commit markers,
the journal and the archive prefix. cdk-nag, cfn-lint and checkov run on the on case too
(CHECKED_CONTEXTS["source-cleaning"], tests/infra/test_checks.py)."""
from __future__ import annotations

import json

import pytest

from infra.config import ConfigError, parse_config
from tests.infra.conftest import SOURCE_CLEANING_CONTEXT, VARIANT_CONTEXT
from tests.infra.test_template import as_list, join_text, of_type, one, statements

DELETES = {"s3:DeleteObject", "s3:DeleteObjectVersion"}


@pytest.fixture(scope="module")
def cleaning_template() -> dict:
    from infra.local_stand_in import synth_template

    return synth_template(SOURCE_CLEANING_CONTEXT)


def source_deleters(tpl: dict) -> list[str]:
    """The roles with a delete action on the source bucket (job roles delete only their own checkpoints)."""
    source = one(tpl, "AWS::S3::Bucket", "SourceBucket")[0]
    out = []
    for lid, role in of_type(tpl, "AWS::IAM::Role").items():
        for policy in role["Properties"].get("Policies", []):
            for s in statements(policy["PolicyDocument"]):
                if DELETES & set(as_list(s["Action"])) and any(source in json.dumps(r) for r in as_list(s["Resource"])):
                    out.append(lid)
    return sorted(set(out))


def test_off_grants_no_role_a_delete_in_the_source_bucket_and_publishes_nothing(template_dict):
    assert source_deleters(template_dict) == []
    assert not [lid for lid in of_type(template_dict, "AWS::IAM::Role") if lid.startswith("SourceCleaner")]
    assert "SourceCleaning" not in template_dict["Outputs"]


def test_on_exactly_one_role_may_delete_and_only_what_the_consumers_read(cleaning_template):
    tpl = cleaning_template
    role_lid, role = one(tpl, "AWS::IAM::Role", "SourceCleanerRole")
    assert source_deleters(tpl) == [role_lid]
    # The scheduled function alone (rate(1 day), the default): no operatorRoles, so no principal of the account.
    assert statements(role["Properties"]["AssumeRolePolicyDocument"]) == [{
        "Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}]
    source = one(tpl, "AWS::S3::Bucket", "SourceBucket")[0]
    ckpt = one(tpl, "AWS::S3::Bucket", "CheckpointsBucket")[0]
    (policy,) = role["Properties"]["Policies"]
    by_sid = {s["Sid"]: s for s in statements(policy["PolicyDocument"])}
    expected = {
        # ingest reads the whole bucket, analytics analytics/ (inside it): the patterns of both.
        "CleanSourceObjects": (["s3:DeleteObject", "s3:DeleteObjectVersion", "s3:GetObject", "s3:GetObjectTagging",
                                "s3:GetObjectVersion", "s3:GetObjectVersionTagging"],
                               [f"<{source}.Arn>/*", f"<{source}.Arn>/analytics/*"]),
        "ReadCommitMarkers": (["s3:GetObject"], [f"<{ckpt}.Arn>/checkpoints/analytics/source-state/committed/*",
                                                 f"<{ckpt}.Arn>/checkpoints/ingest/source-state/committed/*"]),
        "KeepCleaningJournal": (["s3:GetObject", "s3:PutObject"], [f"<{ckpt}.Arn>/source-cleaning/*"]),
        "ListMarkersAndJournal": (["s3:ListBucket"], [f"<{ckpt}.Arn>"]),
        "WriteArchive": (["s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject", "s3:PutObjectTagging"],
                         ["arn:<AWS::Partition>:s3:::acme-archive/landing/*"]),
    }
    assert set(by_sid) == set(expected)
    for sid, (actions, resources) in expected.items():
        assert sorted(as_list(by_sid[sid]["Action"])) == actions, sid
        assert sorted(join_text(r) for r in as_list(by_sid[sid]["Resource"])) == sorted(resources), sid
    assert by_sid["ListMarkersAndJournal"]["Condition"] == {"StringLike": {"s3:prefix": [
        "checkpoints/ingest/source-state/committed/*", "checkpoints/analytics/source-state/committed/*",
        "source-cleaning/*"]}}


def test_on_the_stack_publishes_what_source_state_clean_reads(cleaning_template):
    text = join_text(cleaning_template["Outputs"]["SourceCleaning"]["Value"])
    role = one(cleaning_template, "AWS::IAM::Role", "SourceCleanerRole")[0]
    assert f'"roleArn":"<{role}.Arn>"' in text
    for part in ('"cleanSource":"archive"', '"cleanSourceRetention":"7d"',
                 '"sourceArchiveLocation":"s3://acme-archive/landing/"', '/source-cleaning/"',
                 '"eventFilter":{"prefix":"","suffix":""}'):
        assert part in text, part


def test_on_the_stack_runs_the_cleaner_daily_as_its_one_role_and_alarms_when_a_run_fails(cleaning_template):
    tpl = cleaning_template
    role = one(tpl, "AWS::IAM::Role", "SourceCleanerRole")[0]
    fn_lid, fn = one(tpl, "AWS::Lambda::Function", "SourceCleanerScheduleFunction")
    props = fn["Properties"]
    assert props["Handler"] == "s3sqs.cleaning.scheduled.handler" and props["Role"] == {"Fn::GetAtt": [role, "Arn"]}
    assert props["Timeout"] == 900 and props["ReservedConcurrentExecutions"] == 1
    env = join_text(props["Environment"]["Variables"]["S3SQS_CLEANER"])
    source, ckpt = one(tpl, "AWS::S3::Bucket", "SourceBucket")[0], one(tpl, "AWS::S3::Bucket", "CheckpointsBucket")[0]
    for part in ('"settings":{"cleanSource":"archive","cleanSourceRetention":"7d",'
                 '"sourceArchiveLocation":"s3://acme-archive/landing/"}', f'"sourceBucket":"<{source}>"',
                 f'"journal":"s3://<{ckpt}>/source-cleaning/"',
                 f'{{"name":"ingest","prefix":"","suffix":"","markers":"s3://<{ckpt}>/checkpoints/ingest/source-state"}}',
                 '{"name":"analytics","prefix":"analytics/","suffix":"",'):
        assert part in env, part
    (rule,) = of_type(tpl, "AWS::Events::Rule").values()
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 day)"
    assert rule["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [fn_lid, "Arn"]}
    alarms = [a["Properties"] for a in of_type(tpl, "AWS::CloudWatch::Alarm").values()
              if a["Properties"].get("MetricName") == "Errors"]
    assert [a["Dimensions"] for a in alarms] == [[{"Name": "FunctionName", "Value": {"Ref": fn_lid}}]]
    assert '"schedule":"rate(1 day)"' in join_text(tpl["Outputs"]["SourceCleaning"]["Value"])


def test_a_manual_schedule_defines_no_function_and_only_the_named_operator_roles_may_assume_the_role():
    from infra.local_stand_in import synth_template

    tpl = synth_template({"sourceCleaning": {**SOURCE_CLEANING_CONTEXT["sourceCleaning"], "schedule": "manual",
                                             "operatorRoles": ["data-ops", "cleaners/*"]}})
    assert [k for k in of_type(tpl, "AWS::Lambda::Function") if not k.startswith("BucketNotificationsHandler")] == []
    assert not of_type(tpl, "AWS::Events::Rule")
    role = one(tpl, "AWS::IAM::Role", "SourceCleanerRole")[1]
    (trust,) = statements(role["Properties"]["AssumeRolePolicyDocument"])
    assert set(trust["Principal"]) == {"AWS"}
    assert [join_text(p) for p in trust["Condition"]["ArnLike"]["aws:PrincipalArn"]] == [
        "arn:<AWS::Partition>:iam::<AWS::AccountId>:role/data-ops",
        "arn:<AWS::Partition>:iam::<AWS::AccountId>:role/cleaners/*"]


@pytest.mark.parametrize("schedule, message", [
    ("rate(1 days)", "sourceCleaning.schedule: 'rate(1 days)' is not allowed; allowed: rate(1 day), rate(2 days)"),
    ("rate(5 minutes)", "at least rate(15 minutes)"),
    ("weekly", "sourceCleaning.schedule: 'weekly' is not a schedule; allowed: an EventBridge expression"),
])
def test_a_wrong_schedule_fails_synth_naming_it(schedule, message):
    from infra.app import cdk_json_context

    with pytest.raises(ConfigError) as e:
        parse_config({**cdk_json_context(), "sourceCleaning": {**SOURCE_CLEANING_CONTEXT["sourceCleaning"],
                                                              "schedule": schedule}})
    assert message in str(e.value)


@pytest.mark.parametrize("cleaning, message", [
    ({"cleanSource": "archive"}, "sourceCleaning.sourceArchiveLocation: required with cleanSource archive"),
    ({"cleanSource": "delete", "cleanSourceRetention": "1h"}, "sourceCleaning.cleanSourceRetention: '1h' is too short"),
    ({"cleanSource": "wipe"}, "sourceCleaning.cleanSource: 'wipe' is not allowed; allowed: off, archive, delete"),
    ({"cleanSorce": "delete"}, "sourceCleaning.cleanSorce: unknown setting (did you mean 'cleanSource'?)"),
    ("yes", "sourceCleaning: expected a JSON object"),
])
def test_a_wrong_cleaning_setting_fails_synth_naming_its_key(cleaning, message):
    from infra.app import cdk_json_context

    with pytest.raises(ConfigError) as e:
        parse_config({**cdk_json_context(), "sourceCleaning": cleaning})
    assert message in str(e.value)


def test_an_archive_in_an_imported_source_bucket_must_lie_outside_every_consumers_prefix():
    # VARIANT_CONTEXT: bucket acme-landing-zone, notified prefix incoming/, consumers ingest (no prefix: it reads
    # incoming/) and raw-events (incoming/raw/).
    inside = {"cleanSource": "archive", "sourceArchiveLocation": "s3://acme-landing-zone/incoming/archive/"}
    with pytest.raises(ConfigError, match=r"sourceCleaning.sourceArchiveLocation: the archive "
                                          r"s3://acme-landing-zone/incoming/archive/ is in the source bucket where a "
                                          r"consumer reads prefix 'incoming/'"):
        parse_config({**VARIANT_CONTEXT, "sourceCleaning": inside})
    outside = {"cleanSource": "archive", "sourceArchiveLocation": "s3://acme-landing-zone/archive/"}
    cfg = parse_config({**VARIANT_CONTEXT, "sourceCleaning": outside})
    assert (cfg.source_cleaning.archive_bucket, cfg.source_cleaning.archive_prefix) == ("acme-landing-zone", "archive/")


def test_operator_roles_given_as_json_text_as_dash_c_passes_them_are_read():
    from infra.app import cdk_json_context

    cleaning = {**SOURCE_CLEANING_CONTEXT["sourceCleaning"], "schedule": "manual", "operatorRoles": '["data-ops"]'}
    assert parse_config({**cdk_json_context(), "sourceCleaning": cleaning}).cleaning_operator_roles == ("data-ops",)
    with pytest.raises(ConfigError, match=r"sourceCleaning\.operatorRoles\[0\]: 'arn:aws:iam::1:role/x' is an ARN"):
        parse_config({**cdk_json_context(), "sourceCleaning": {**cleaning, "operatorRoles": '["arn:aws:iam::1:role/x"]'}})
