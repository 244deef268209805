"""cdk.json context -> StackConfig: the example parses, defaults apply, bad values name their key."""
from __future__ import annotations

import copy
import json

import pytest

from infra.config import ConfigError, DEFAULT_RELEASE_LABEL, parse_config
from tests.infra.conftest import VARIANT_CONTEXT


@pytest.fixture(scope="module")
def example() -> dict:
    from infra.app import cdk_json_context

    return cdk_json_context()


def test_cdk_json_example_is_complete_and_valid(example):
    cfg = parse_config(example)
    assert not cfg.source_bucket.imported
    names = [c.name for c in cfg.consumers]
    assert names[:2] == ["ingest", "analytics"]
    ingest, analytics = cfg.consumers[:2]
    # The local demo relies on `ingest` seeing every ObjectCreated event.
    assert ingest.prefix == ""
    assert analytics.prefix == "analytics/"
    assert cfg.emr.release_label == DEFAULT_RELEASE_LABEL == "emr-spark-8.0.0"
    assert cfg.kms.mode == "managed"
    # Every setting is spelled out in the example, so the README can point at it.
    for key in ("sourceBucket", "eventFilter", "consumers", "crossAccountPrincipals", "kms", "emr", "alarms",
                "sourceCleaning"):
        assert key in example
    assert set(example["consumers"][0]) == {"name", "accountId", "prefix", "maxReceiveCount",
                                           "visibilityTimeoutSeconds"}


def test_cdk_json_keeps_the_cli_offline():
    from infra.app import CDK_JSON

    doc = json.loads(CDK_JSON.read_text())
    assert doc["notices"] is False
    assert doc["context"]["cli-telemetry"] is False
    assert doc["app"].endswith("-m infra.app")


def test_defaults_fill_optional_sections():
    cfg = parse_config({"sourceBucket": {"mode": "new"},
                        "consumers": [{"name": "a", "accountId": "123456789012"}],
                        "crossAccountPrincipals": ["arn:aws:iam::123456789012:role/reader"]})
    c = cfg.consumers[0]
    assert (c.prefix, c.max_receive_count, c.visibility_timeout_seconds) == ("", 5, 300)
    assert cfg.kms.mode == "managed"
    assert cfg.emr.release_label == "emr-spark-8.0.0"
    assert cfg.emr.architecture == "X86_64"
    assert cfg.alarms.dlq_messages_threshold == 1
    assert cfg.alarms.malformed_rows_threshold == 1
    assert cfg.event_filter.prefix == cfg.event_filter.suffix == ""
    assert cfg.principals_for(c) == ("arn:aws:iam::123456789012:role/reader",)
    assert cfg.grant_for(c).conditions == {}


def test_alarm_settings_and_emails():
    cfg = parse_config(_with("alarms", {"quarantinedFilesThreshold": "10", "evaluationPeriods": 3,
                                        "malformedRowsThreshold": 5000,
                                        "emails": [" ops@example.com ", "Team.Lead+alarms@example.org"]}))
    a = cfg.alarms
    assert (a.quarantined_files_threshold, a.evaluation_periods, a.dlq_messages_threshold) == (10, 3, 1)
    assert a.malformed_rows_threshold == 5000
    # Rows outnumber files: the bound is a thousand times the files' one.
    assert parse_config(_with("alarms", {"malformedRowsThreshold": "1000000000"})).alarms.malformed_rows_threshold \
        == 1_000_000_000
    assert a.emails == ("ops@example.com", "Team.Lead+alarms@example.org")  # trimmed, case kept
    # As `cdk deploy -c 'alarms={...}'` passes them: JSON text, the list inside included.
    assert parse_config(_with("alarms", '{"emails": ["ops@example.com"]}')).alarms.emails == ("ops@example.com",)
    assert parse_config(_with("alarms", {"emails": '["a@example.com"]'})).alarms.emails == ("a@example.com",)
    assert parse_config(_with("alarms", _DELETE)).alarms.emails == ()


def test_variant_parses_with_principals_per_account():
    cfg = parse_config(VARIANT_CONTEXT)
    assert cfg.source_bucket.imported and cfg.source_bucket.bucket_name == "acme-landing-zone"
    ingest, raw = cfg.consumers
    assert raw.construct_id == "RawEvents"
    assert cfg.principals_for(raw) == ("arn:aws:iam::210987654321:role/raw-reader",)
    assert cfg.principals_for(ingest) == ("arn:aws:iam::123456789012:root",)
    # The account is granted only because accountAccess says so, and only under its conditions.
    assert cfg.grant_for(ingest).conditions == {
        "ArnLike": {"aws:PrincipalArn": ["arn:aws:iam::123456789012:role/ingest-*"]},
        "StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"},
    }
    assert cfg.grant_for(raw).conditions == {}
    assert cfg.read_prefix(ingest) == "incoming/"
    assert cfg.read_prefix(raw) == "incoming/raw/"
    assert (ingest.iceberg_glue_database, raw.iceberg_glue_database) == (None, "raw_lake")
    # Reads stop at what S3 notifies for: the prefix and the suffix.
    assert cfg.read_pattern(ingest) == "incoming/*.json"
    assert cfg.read_pattern(raw) == "incoming/raw/*.json"


def test_an_org_condition_alone_is_enough_for_an_account_grant():
    ctx = copy.deepcopy(VARIANT_CONTEXT)
    ctx["consumers"][0]["accountAccess"] = {"principalOrgId": "o-a1b2c3d4e5"}
    ingest = parse_config(ctx).consumers[0]
    assert parse_config(ctx).grant_for(ingest).conditions == {"StringEquals": {"aws:PrincipalOrgID": "o-a1b2c3d4e5"}}


@pytest.mark.parametrize("principal", ["123456789012", "arn:aws:iam::123456789012:root"])
def test_an_account_wide_principal_is_refused_with_the_fix(principal):
    ctx = copy.deepcopy(VARIANT_CONTEXT)
    del ctx["consumers"][0]["accountAccess"]
    ctx["crossAccountPrincipals"] = [principal, *ctx["crossAccountPrincipals"]]
    with pytest.raises(ConfigError) as err:
        parse_config(ctx)
    message = str(err.value)
    assert message.startswith("crossAccountPrincipals[0]: ") and "grants the whole account 123456789012" in message
    assert "arn:aws:iam::123456789012:role/<name>" in message and '"accountAccess"' in message


def test_a_consumer_with_no_principal_must_say_it_grants_its_account():
    ctx = copy.deepcopy(VARIANT_CONTEXT)
    del ctx["consumers"][0]["accountAccess"]
    with pytest.raises(ConfigError) as err:
        parse_config(ctx)
    message = str(err.value)
    assert message.startswith("consumers[0]: no principal for account 123456789012")
    assert "crossAccountPrincipals" in message and "consumers[0].accountAccess" in message


def test_json_strings_from_the_command_line_are_accepted():
    cfg = parse_config({
        "sourceBucket": '{"mode": "import", "bucketName": "my-bucket"}',
        "consumers": '[{"name": "a", "accountId": "123456789012", "maxReceiveCount": "7"}]',
        "crossAccountPrincipals": '["arn:aws:iam::123456789012:role/r"]',
    })
    assert cfg.source_bucket.bucket_name == "my-bucket"
    assert cfg.consumers[0].max_receive_count == 7
    assert cfg.cross_account_principals == ("arn:aws:iam::123456789012:role/r",)


def _with(path: str, value) -> dict:
    """The valid variant context with one value replaced (path like 'consumers[1].maxReceiveCount')."""
    ctx = copy.deepcopy(VARIANT_CONTEXT)
    node = ctx
    parts = path.replace("]", "").replace("[", ".").split(".")
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node.setdefault(part, {})
    last = parts[-1]
    if value is _DELETE:
        del node[int(last) if last.isdigit() else last]
    elif last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return ctx


_DELETE = object()


@pytest.mark.parametrize("path, value, key, allowed", [
    ("sourceBucket.mode", "borrow", "sourceBucket.mode", "'new', 'import'"),
    ("sourceBucket.bucketName", _DELETE, "sourceBucket.bucketName", "required when sourceBucket.mode is \"import\""),
    ("sourceBucket.bucketName", "Bad_Name", "sourceBucket.bucketName", "3-63 of a-z 0-9 . -"),
    ("sourceBucket.bucketName", "my-bucket\n", "sourceBucket.bucketName", "3-63 of a-z 0-9 . -"),
    ("eventFilter.prefix", "incoming/\n", "eventFilter.prefix", "A-Z a-z 0-9 / _ . -"),
    # An unknown key names the nearest known one, and the section's keys.
    ("sourceBucket.colour", "red", "sourceBucket", "unknown key(s) colour; allowed keys: mode, bucketName"),
    ("eventFilter.prefix", "in coming/", "eventFilter.prefix", "A-Z a-z 0-9 / _ . -"),
    ("consumers", [], "consumers", "a non-empty list"),
    ("consumers", "not json", "consumers", "expected a JSON list"),
    ("consumers[1].maxReceiveCount", 0, "consumers[1].maxReceiveCount", "an integer from 1 to 1000"),
    ("consumers[1].maxReceiveCount", True, "consumers[1].maxReceiveCount", "expected integer"),
    ("consumers[1].maxReceiveCount", "--5", "consumers[1].maxReceiveCount", "expected integer"),
    # Without an accountId a consumer is the deploying account's own: nobody outside is granted, so a role
    # listed for its former account belongs to no consumer.
    ("consumers[1].accountId", _DELETE, "crossAccountPrincipals[0]", "not the accountId of any consumer"),
    ("consumers[0].visibilityTimeoutSeconds", 43201, "consumers[0].visibilityTimeoutSeconds",
     "an integer from 0 to 43200"),
    ("consumers[1].accountId", 210987654321, "consumers[1].accountId", "expected string"),
    ("consumers[1].accountId", "2109876543", "consumers[1].accountId", "a 12-digit AWS account id"),
    ("consumers[1].accountId", None, "crossAccountPrincipals[0]", "not the accountId of any consumer"),
    ("consumers[1].name", "Raw_Events", "consumers[1].name", "lower-case letters, digits and '-'"),
    ("consumers[1].name", "ingest", "consumers[1].name", "unique names"),
    ("consumers[1].prefix", "elsewhere/", "consumers[1].prefix", "a prefix starting with 'incoming/'"),
    # A grant matches keys by prefix: without its '/', 'incoming/analytics' also grants 'incoming/analytics-private/'.
    ("consumers[1].prefix", "incoming/analytics", "consumers[1].prefix",
     "a prefix ending in '/', such as 'incoming/analytics/'"),
    ("consumers[1].maxRecieveCount", 3, "consumers[1]",
     "unknown key(s) maxRecieveCount (did you mean 'maxReceiveCount'?); allowed keys: name, accountId, prefix"),
    ("consumers[1].icebergGlueDatabase", "Raw-Lake", "consumers[1].icebergGlueDatabase",
     "1-255 lower-case letters, digits and '_'"),
    ("consumers[1].icebergGlueDatabase", 7, "consumers[1].icebergGlueDatabase", "expected string"),
    ("crossAccountPrincipals[0]", "arn:aws:iam::999999999999:role/x", "crossAccountPrincipals[0]",
     "principals in 123456789012, 210987654321"),
    ("crossAccountPrincipals[0]", "arn:aws:sts::210987654321:assumed-role/x", "crossAccountPrincipals[0]",
     "an IAM role ARN"),
    ("crossAccountPrincipals[0]", "arn:aws:iam::210987654321:user/bob", "crossAccountPrincipals[0]",
     "roles, not users"),
    ("consumers[0].accountAccess", {}, "consumers[0].accountAccess", "principalArnLike (a list of role ARN patterns)"),
    ("consumers[0].accountAccess.principalArnLike", ["arn:aws:iam::210987654321:role/x"],
     "consumers[0].accountAccess.principalArnLike[0]", "in account 123456789012"),
    ("consumers[0].accountAccess.principalArnLike", ["arn:aws:iam::123456789012:user/*"],
     "consumers[0].accountAccess.principalArnLike[0]", "roles only (a user carries long-term keys)"),
    ("consumers[0].accountAccess.principalOrgId", "org-1", "consumers[0].accountAccess.principalOrgId",
     "an AWS Organizations id"),
    ("consumers[0].accountAccess.anyone", True, "consumers[0].accountAccess",
     "allowed keys: principalArnLike, principalOrgId"),
    ("consumers[1].accountAccess", {"principalOrgId": "o-a1b2c3d4e5"}, "consumers[1].accountAccess",
     "allowed: one of the two"),
    ("kms.mode", "aws", "kms.mode", "'managed', 'customer'"),
    ("emr.releaseLabel", "emr-7.9.0", "emr.releaseLabel", "an EMR release with Spark 4"),
    ("emr.architecture", "arm64", "emr.architecture", "'X86_64', 'ARM64'"),
    ("emr.maximumCapacity.memoryGb", 200, "emr.maximumCapacity.memoryGb", "1 to 8 GB per vCPU"),
    ("emr.maximumCapacity", {"vcpu": 100}, "emr.maximumCapacity.memoryGb", "64 GB for 100 vCPU"),
    ("emr.maximumCapacity.memoryGB", 1, "emr.maximumCapacity",
     "unknown key(s) memoryGB (did you mean 'memoryGb'?); allowed keys: vcpu, "),
    ("emr.idleTimeoutMinutes", 0, "emr.idleTimeoutMinutes", "an integer from 1 to 10080"),
    ("emr.logRetentionDays", 31, "emr.logRetentionDays", "1, 3, 5, 7, 14, 30"),
    ("alarms.periodSeconds", 90, "alarms.periodSeconds", "a multiple of 60"),
    ("alarms.oldestMessageAgeSeconds", 10, "alarms.oldestMessageAgeSeconds", "an integer from 60 to 1209600"),
    ("alarms.quarantinedFilesThreshold", 0, "alarms.quarantinedFilesThreshold", "an integer from 1 to 1000000"),
    ("alarms.quarantinedFilesThreshold", "many", "alarms.quarantinedFilesThreshold", "expected integer"),
    ("alarms.dlqMessagesThreshold", -1, "alarms.dlqMessagesThreshold", "an integer from 1 to 1000000"),
    ("alarms.malformedRowsThreshold", 0, "alarms.malformedRowsThreshold", "an integer from 1 to 1000000000"),
    ("alarms.malformedRowsThreshold", 10_000_000_000, "alarms.malformedRowsThreshold",
     "an integer from 1 to 1000000000"),
    ("alarms.malformedRowsThreshold", "some", "alarms.malformedRowsThreshold", "expected integer"),
    ("alarms.malformedRowsThreshold", True, "alarms.malformedRowsThreshold", "expected integer"),
    ("alarms.malformedRowsThreshold", 2.5, "alarms.malformedRowsThreshold", "expected integer"),
    ("alarms.malformedRowThreshold", 5, "alarms",
     "unknown key(s) malformedRowThreshold (did you mean 'malformedRowsThreshold'?)"),
    ("alarms.evaluationPeriods", 0, "alarms.evaluationPeriods", "an integer from 1 to 100"),
    ("alarms.emails", "ops@example.com", "alarms.emails", "expected a JSON list"),
    ("alarms.emails", {"to": "ops@example.com"}, "alarms.emails", "expected list"),
    ("alarms.emails", ["ops@example.com", 7], "alarms.emails[1]", "expected string"),
    ("alarms.emails", ["ops@example.com", "ops"], "alarms.emails[1]", "an address such as ops@example.com"),
    ("alarms.emails", ["ops@localhost"], "alarms.emails[0]", "an address such as ops@example.com"),
    ("alarms.emails", ["two words@example.com"], "alarms.emails[0]", "an address such as ops@example.com"),
    ("alarms.emails", ["ops@example.com", "OPS@Example.com"], "alarms.emails[1]", "each address once"),
    ("alarms.emails", [f"ops{i}@example.com" for i in range(21)], "alarms.emails", "at most 20"),
    ("alarms.email", ["ops@example.com"], "alarms",
     "unknown key(s) email (did you mean 'emails'?); allowed keys: dlqMessagesThreshold, oldestMessageAgeSeconds"),
])
def test_bad_values_name_the_key_and_what_is_allowed(path, value, key, allowed):
    with pytest.raises(ConfigError) as err:
        parse_config(_with(path, value))
    message = str(err.value)
    assert message.startswith(f"{key}:"), message
    assert allowed in message, message


@pytest.mark.parametrize("missing", ["sourceBucket", "consumers"])
def test_required_sections(missing):
    ctx = copy.deepcopy(VARIANT_CONTEXT)
    del ctx[missing]
    with pytest.raises(ConfigError, match=rf"^{missing}: missing; allowed: "):
        parse_config(ctx)


def test_a_bad_value_fails_the_app_before_any_construct(example):
    from infra.app import build_app

    bad = {**example, "consumers": [{"name": "ingest", "accountId": "123"}]}
    with pytest.raises(ConfigError, match=r"consumers\[0\]\.accountId"):
        build_app(bad, nag=False, builtin_validation=False)


@pytest.mark.parametrize("key, hint", [
    ("alarm", " (did you mean 'alarms'?)"),
    ("Consumers", " (did you mean 'consumers'?)"),
    ("sourcebucket", " (did you mean 'sourceBucket'?)"),
    ("colour", ""),
])
def test_an_unknown_top_level_key_fails_with_a_did_you_mean(example, key, hint):
    with pytest.raises(ConfigError) as err:
        parse_config({**example, key: {"dlqMessagesThreshold": 5}})
    assert str(err.value).startswith(f"{key}: unknown top-level context key{hint}; allowed: sourceBucket, ")


def test_cdk_s_own_context_keys_are_accepted(example):
    """cdk.json's feature flags, what the CLI passes (seen in its CDK_CONTEXT_JSON), what `cdk acknowledge`
    writes, and cached lookups from cdk.context.json."""
    assert any(k.startswith("@aws-cdk-containers/") for k in example) and "cli-telemetry" in example
    cli_keys = {"aws:cdk:bundling-stacks": ["**"], "aws:cdk:enable-asset-metadata": True,
                "aws:cdk:enable-path-metadata": True, "aws:cdk:version-reporting": True,
                "aws:cdk:disable-version-reporting": True}
    written = {"acknowledged-issue-numbers": [32775],
               "availability-zones:account=123456789012:region=eu-west-1": ["eu-west-1a"]}
    parse_config({**example, **cli_keys, **written})


def test_an_unknown_key_fails_the_app_too(example):
    from infra.app import build_app

    with pytest.raises(ConfigError, match=r"^alarm: unknown top-level context key \(did you mean 'alarms'\?\)"):
        build_app({**example, "alarm": {"dlqMessagesThreshold": 5}}, nag=False, builtin_validation=False)


# The README's and docs/deploy.md's single-account context: one consumer of the deploying account, no
# other account, no role to invent.
SINGLE_ACCOUNT = {"sourceBucket": {"mode": "new"},
                  "consumers": [{"name": "orders", "icebergGlueDatabase": "orders_lake"}]}


def test_a_single_account_context_needs_no_principal():
    cfg = parse_config(SINGLE_ACCOUNT)
    (orders,) = cfg.consumers
    assert orders.account_id is None and cfg.cross_account_principals == ()
    assert cfg.grant_for(orders).principals == () and cfg.grant_for(orders).conditions == {}


def test_account_access_needs_the_account():
    bad = {**SINGLE_ACCOUNT, "consumers": [{"name": "orders", "accountAccess": {"principalOrgId": "o-a1b2c3d4e5"}}]}
    with pytest.raises(ConfigError, match=r"consumers\[0\]\.accountAccess: .*needs the consumer's accountId"):
        parse_config(bad)
