"""ops/emr/preflight.py: submit-job checks the job's flags the way the job does. Pure, no AWS."""
from __future__ import annotations

import pytest

from s3sqs.job.flags import parse_job_args
from s3sqs.job.main import source_options

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
