"""ops/emr/preflight.py: submit-job checks the job's flags the way the job does. Pure, no AWS."""
from __future__ import annotations

import pytest

from s3sqs.job.flags import parse_job_args
from s3sqs.job.preflight import source_options

from ops.emr import SubmitError, preflight

QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"


def test_the_options_checked_are_the_ones_the_job_builds():
    """submit-job must not drift from app/job.py: same flags in, same source options out."""
    flags = ["--queue-url", QUEUE, "--format", "csv", "--schema", "id LONG", "--checkpoint", "s3://ck/orders/",
             "--output", "s3://lake/orders", "--region", "eu-west-1", "--endpoint-url", "http://127.0.0.1:5000",
             "--option", "header=true", "--option", "maxFilesPerTrigger=500"]
    expected = source_options(parse_job_args(flags))
    ours = preflight.job_source_options("csv", QUEUE, "s3://ck/orders/",
                                        {"header": "true", "maxFilesPerTrigger": "500"},
                                        region="eu-west-1", endpoint_url="http://127.0.0.1:5000")
    assert ours == expected


def test_schema_and_partition_columns():
    schema = preflight.check_schema("id LONG, day STRING", ("day",))
    assert schema.names == ["id", "day"]
    with pytest.raises(SubmitError, match=r"^--partition-by: column 'Day' is not in --schema \(did you mean 'day'\?\)"):
        preflight.check_schema("id LONG, day STRING", ("Day",))
    with pytest.raises(SubmitError, match=r"^--schema: DECIMAL precision 40"):
        preflight.check_schema("x DECIMAL(40, 2)", ())


def test_options_are_the_source_s_own_checks():
    schema = preflight.check_schema("id LONG, day STRING", ())
    raw = preflight.job_source_options("csv", QUEUE, "s3://ck", {"partitionColumns": "day", "maxFileAge": "2h"})
    preflight.check_options(raw, schema)
    with pytest.raises(SubmitError, match=r"^--option: option 'maxFileAge'"):
        preflight.check_options({**raw, "maxFileAge": "two hours"}, schema)
    with pytest.raises(SubmitError, match=r"^--option: option 'header' does not apply to fileFormat json"):
        preflight.check_options({**raw, "fileFormat": "json", "header": "true"}, schema)
    with pytest.raises(SubmitError, match=r"^--option partitionColumns: column 'hour' is not in --schema"):
        preflight.check_options({**raw, "partitionColumns": "day,hour"}, schema)


def test_columns_a_format_cannot_hold_are_refused_before_anything_is_uploaded():
    raw = preflight.job_source_options("csv", QUEUE, "s3://ck", {})
    with pytest.raises(SubmitError, match=r"^--schema: column 'tags' is ARRAY, but CSV holds no nested values"):
        preflight.check_options(raw, preflight.check_schema("id LONG, tags ARRAY<STRING>", ()))
    with pytest.raises(SubmitError, match=r"^--schema: column 'doc' is VARIANT, which only fileFormat json"):
        preflight.check_options({**raw, "fileFormat": "parquet"}, preflight.check_schema("doc VARIANT", ()))
    preflight.check_options({**raw, "fileFormat": "json"}, preflight.check_schema("doc VARIANT, m MAP<STRING, LONG>", ()))
    assert preflight.check_schema(None, ("day",)) is None  # no --schema: the job infers it


# What the backfill lists or records must be where the consumer's job role may list and read: the stack's source
# bucket under the consumer's prefix.
SOURCE, PREFIX = "landing-zone", "analytics/"


ROLE = "arn:aws:iam::123456789012:role/S3SqsStreaming-JobRoleAnalytics"


def backfill(given: dict[str, str], prefix: str = PREFIX, bucket: str | None = SOURCE) -> list[str]:
    raw = preflight.job_source_options("csv", QUEUE, "s3://ck/orders", given)
    return preflight.check_emr_backfill(preflight.check_options(raw, None), given, "analytics", bucket, prefix, ROLE)


def test_a_listing_outside_what_the_job_role_may_list_is_refused_naming_option_location_scope_and_fix():
    with pytest.raises(SubmitError) as e:
        backfill({"includeExistingFiles": "true", "basePath": "s3://elsewhere/landing"})
    assert str(e.value) == (
        "--option includeExistingFiles=true lists basePath s3://elsewhere/landing/, but consumer 'analytics''s job "
        "role may list and read only s3://landing-zone/analytics/ (the stack's source bucket, under the consumer's "
        "prefix); use --option basePath=s3://landing-zone/analytics/ or a location under it")
    # The same bucket outside the prefix; a prefix that merely starts with it; Auto Loader's spelling.
    with pytest.raises(SubmitError, match=r"^--option cloudFiles.backfillInterval=1d lists basePath s3://landing-zone/"
                                          r", but consumer"):
        backfill({"cloudFiles.backfillInterval": "1d", "basePath": "s3://landing-zone/"})
    with pytest.raises(SubmitError, match=r"lists basePath s3://landing-zone/analytics-private/, but"):
        backfill({"includeExistingFiles": "true", "basePath": "s3://landing-zone/analytics-private/"})


def listed_only(lines: list[str]) -> bool:
    return [ln.split(" lists ")[0] for ln in lines] in (["note: --option includeExistingFiles=true"],
                                                        ["note: --option backfillInterval=6h"])


def test_a_listing_inside_what_the_job_role_may_list_passes_and_says_what_maxfileage_leaves_out():
    assert backfill({"includeExistingFiles": "true", "basePath": "s3://landing-zone/analytics/"}) == [
        "note: --option includeExistingFiles=true lists s3://landing-zone/analytics/ and takes only the files modified "
        "within maxFileAge (15 days); older ones are left out: raise maxFileAge to reach them, or backfill from an S3 "
        "Inventory report (backfillFromInventory)"]
    assert "within maxFileAge (7200 s)" in backfill({"includeExistingFiles": "true", "maxFileAge": "2h",
                                                            "basePath": "s3://landing-zone/analytics/"})[0]
    assert listed_only(backfill({"backfillInterval": "6h", "basePath": "s3://landing-zone/analytics/2026/orders"}))
    # An empty prefix is the whole bucket, and only the bucket matters then.
    assert listed_only(backfill({"includeExistingFiles": "true", "basePath": "s3://landing-zone/"}, prefix=""))
    with pytest.raises(SubmitError, match=r"may list and read only s3://landing-zone/ \("):
        backfill({"includeExistingFiles": "true", "basePath": "s3://other/"}, prefix="")
    # basePath alone lists nothing (it names where partition values start): not this check's business.
    assert backfill({"basePath": "s3://elsewhere/landing/"}) == []
    assert backfill({"includeExistingFiles": "false", "basePath": "s3://elsewhere/landing/"}) == []


def test_outputs_without_the_source_bucket_cannot_say_what_may_be_listed():
    with pytest.raises(SubmitError, match=r"^--option includeExistingFiles=true: the outputs file has no "
                                          r"SourceBucketName, .* re-run `cdk deploy --outputs-file`"):
        backfill({"includeExistingFiles": "true", "basePath": "s3://landing-zone/analytics/"}, bucket=None)
    assert backfill({}, bucket=None) == []  # nothing listed: nothing asked of the outputs


REPORT = "s3://inventory-reports/landing-zone/daily/2026-11-26T01-00Z/manifest.json"


def test_an_inventory_report_records_only_what_the_job_role_may_read_and_its_bucket_needs_a_grant():
    # The report's objects under basePath are read afterwards: the same scope as a listing.
    with pytest.raises(SubmitError, match=r"^--option backfillFromInventory=s3://inventory-reports/\S+ records the "
                                          r"report's objects under basePath s3://landing-zone/, but consumer "
                                          r"'analytics''s job role may list and read only s3://landing-zone/analytics/"):
        backfill({"backfillFromInventory": REPORT, "basePath": "s3://landing-zone/"})
    with pytest.raises(SubmitError, match=r"without basePath records every object of the report, but .*; add "
                                          r"--option basePath=s3://landing-zone/analytics/$"):
        backfill({"backfillFromInventory": REPORT})
    # Inside the scope: a warning that the report's own bucket needs a grant the stack does not make.
    warnings = backfill({"backfillFromInventory": REPORT, "basePath": "s3://landing-zone/analytics/"})
    assert warnings == [f"warning: --option backfillFromInventory={REPORT}: the stack grants consumer 'analytics''s job "
                        "role no read of s3://inventory-reports/ (it reads only s3://landing-zone/analytics/); grant "
                        f"it ({ROLE}) s3:GetObject on the report's manifest and data files (in that bucket's policy, "
                        "say) or the run fails at its start"]
    # A report kept where the role reads anyway needs nothing more; the whole bucket needs no basePath.
    assert backfill({"backfillFromInventory": "s3://landing-zone/analytics/inventory/manifest.json",
                     "basePath": "s3://landing-zone/analytics/"}) == []
    assert len(backfill({"backfillFromInventory": REPORT}, prefix="")) == 1
