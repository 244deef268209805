import re

import pytest

from s3sqs.config.options import OptionError, option_name, parse_options, region_from_queue_url

BASE = {"fileFormat": "csv", "queueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/q",
        "stateLocation": "s3://ck/state/"}


def test_defaults_match_the_original_connector():
    o = parse_options(BASE)
    assert o.file_format == "csv" and o.queue_region == "eu-west-1"
    assert o.max_files_per_trigger == 100 and o.max_bytes_per_trigger is None
    assert o.max_file_age_seconds == 15 * 86400
    assert o.long_poll_wait_seconds == 10 and o.queue_fetch_wait_timeout_seconds == 20
    assert (o.max_concurrency, o.max_retries, o.visibility_timeout_seconds) == (50, 10, 60)
    assert o.keep_message_for_consumer_error is False and o.state_location == "s3://ck/state"


def test_names_are_case_insensitive_and_prefixed_forms_accepted():
    o = parse_options({**BASE, "MAXFILESPERTRIGGER": "-1", "spark.s3conn.sqs.longPollingWaitTimeSeconds": "4",
                       "spark.s3conn.maxFileAge": "2h", "header": "true"})
    assert o.max_files_per_trigger is None and o.long_poll_wait_seconds == 4
    assert o.queue_fetch_wait_timeout_seconds == 8 and o.max_file_age_seconds == 7200
    assert o.reader_options["header"] is True and o.reader_options["sep"] == ","


def test_typo_names_the_option_and_suggests_the_right_one():
    with pytest.raises(OptionError, match=r"unknown option 'maxFilesPerTriger'.*did you mean 'maxFilesPerTrigger'"):
        parse_options({**BASE, "maxFilesPerTriger": "5"})


@pytest.mark.parametrize("extra, message", [
    # the format and its reader's options
    ({"fileFormat": "avrow"}, "fileFormat' must be one of csv, json, parquet, orc, avro.*did you mean 'avro'"),
    ({"fileFormat": "xml"}, "'rowTag' is required"),
    ({"mode": "PERMISSIVE", "fileFormat": "parquet"}, "'mode' does not apply to fileFormat parquet"),
    ({"schemaEvolutionMode": "addNewColumn"}, "did you mean 'addNewColumns'"),
    ({"schemaHints": "ts TIMESTAMP,"}, "schemaHints' must list columns as DDL"),
    ({"sep": ";", "delimiter": ","}, "given twice, under two names"),
    ({"delimiter": ";;"}, "single character"),
    ({"multiLine": "perhaps"}, "option 'multiLine' must be true or false"),
    ({"encoding": "utf-99"}, "option 'encoding' must be a character encoding"),
    # the queue, the batch limits, reprocessing
    ({"queueUrl": "my-queue"}, "SQS queue URL"),
    ({"sqs.longPollingWaitTimeSeconds": "21"}, "0 to 20"),
    ({"sqs.keepMessageForConsumerError": "maybe"}, "true or false"),
    ({"maxFilesPerTrigger": "ten"}, "whole number"),
    ({"maxFilesPerTrigger": "0"}, "-1 for unlimited"),
    ({"maxFileAge": "soon"}, "duration"),
    ({"maxBytesPerTrigger": "lots"}, "size like"),
    ({"reprocessStartBatchId": "3"}, "given together"),
    ({"reprocessStartBatchId": "3", "reprocessEndBatchId": "1"}, "before"),
    # where the files are
    ({"basePath": "/local"}, "s3://"),
    ({"path": "s3://bucket/data"}, "takes no path"),
])
def test_invalid_values_name_the_option(extra, message):
    with pytest.raises(OptionError, match=message):
        parse_options({**BASE, **extra})


def test_required_options():
    for key in ("fileFormat", "queueUrl", "stateLocation"):
        opts = {k: v for k, v in BASE.items() if k != key}
        with pytest.raises(OptionError, match=f"'{key}' is required"):
            parse_options(opts)


def test_formats_match_case_insensitively_and_synonyms_map_to_spark_names():
    o = parse_options({**BASE, "fileFormat": "BINARYFILE"})
    assert o.file_format == "binaryFile" and o.reader_options == {"maxFileSize": 512 << 20}
    o = parse_options({**BASE, "DELIMITER": ";", "charset": "latin1", "quote": ""})
    assert (o.reader_options["sep"], o.reader_options["encoding"], o.reader_options["quote"]) == (";", "iso8859-1", "")


def test_reader_options_must_fit_the_format():
    with pytest.raises(OptionError, match="does not apply to fileFormat parquet"):
        parse_options({**BASE, "fileFormat": "parquet", "header": "true"})


def test_region_from_url():
    assert region_from_queue_url("https://sqs.us-west-2.amazonaws.com/1/q") == "us-west-2"
    assert region_from_queue_url("http://127.0.0.1:5000/123456789012/q") is None


@pytest.mark.parametrize("url", ["http://127.0.0.1:5000", "http://localhost:9000", "http://10.1.2.3:9000",
                                 "http://192.168.0.5", "http://[::1]:5000", "https://minio.example.com",
                                 "https://s3.eu-west-1.amazonaws.com"])
def test_endpoint_accepted_over_tls_or_on_a_local_network(url, monkeypatch):
    monkeypatch.delenv("S3SQS_ALLOW_HTTP_ENDPOINT", raising=False)
    assert parse_options({**BASE, "endpointUrl": url}).endpoint_url == url


@pytest.mark.parametrize("url", ["http://minio.example.com:9000", "http://8.8.8.8", "http://s3.amazonaws.com"])
def test_plain_http_to_a_public_host_needs_an_explicit_allow(url, monkeypatch):
    monkeypatch.delenv("S3SQS_ALLOW_HTTP_ENDPOINT", raising=False)
    with pytest.raises(OptionError, match=r"endpointUrl.*plain http://.*S3SQS_ALLOW_HTTP_ENDPOINT=1"):
        parse_options({**BASE, "endpointUrl": url})
    monkeypatch.setenv("S3SQS_ALLOW_HTTP_ENDPOINT", "1")
    assert parse_options({**BASE, "endpointUrl": url}).endpoint_url == url


# ---- Auto Loader's names (docs/source.md: "Coming from Auto Loader") ----

def test_auto_loader_names_this_source_shares_are_read_under_the_cloudfiles_prefix():
    o = parse_options({**BASE, "cloudFiles.maxFilesPerTrigger": "7", "cloudfiles.maxFileAge": "2d",
                       "cloudFiles.includeExistingFiles": "true", "basePath": "s3://b/in/"})
    assert (o.max_files_per_trigger, o.max_file_age_seconds, o.include_existing_files) == (7, 2 * 86400, True)


def test_auto_loader_names_for_what_this_source_names_differently_are_read_as_its_own():
    base = {k: v for k, v in BASE.items() if k != "fileFormat"}
    o = parse_options({**base, "cloudFiles.format": "JSON", "cloudFiles.region": "eu-west-1",
                       "cloudFiles.fetchParallelism": "3", "cloudFiles.schemaInference.sampleSize.numFiles": "5",
                       "cloudfiles.schemaInference.sampleSize.numBytes": "1m"})
    assert (o.file_format, o.queue_region, o.schema_inference_max_files) == ("json", "eu-west-1", 5)
    assert o.schema_inference_max_bytes == 1 << 20 and o.max_concurrency == 3


def test_one_option_under_two_names_with_two_values_is_refused_and_with_one_value_accepted():
    with pytest.raises(OptionError, match=re.escape("option 'fileFormat' is given twice, under two names, with "
                                                    "different values ('csv' and 'json'); give it once")):
        parse_options({**BASE, "cloudFiles.format": "json"})
    assert parse_options({**BASE, "cloudFiles.format": "csv", "cloudFiles.schemaLocation": "s3://b/s",
                          "schemaLocation": "s3://b/s"}).schema_location == "s3://b/s"


@pytest.mark.parametrize("key, message", [
    ("badRecordsPath", "use quarantineLocation"),
    ("cloudFiles.useNotifications", "not needed: this source always reads S3 notifications"),
    ("ignoreMissingFiles", "always recorded as missing"),  # never "corrected" to includeExistingFiles
    ("cloudFiles.cleanSource", "set once for the whole stack"),
    ("cloudFiles.somethingNew", "an Auto Loader option this source does not have; the ones it understands"),
])
def test_auto_loader_options_named_differently_or_missing_say_so(key, message):
    with pytest.raises(OptionError, match=re.escape(message)):
        parse_options({**BASE, key: "x"})


def test_the_translation_table_lists_only_real_options():
    from s3sqs.config.options import AUTO_LOADER_ALIASES, AUTO_LOADER_RENAMED, AUTO_LOADER_SAME, SOURCE_OPTIONS

    assert set(AUTO_LOADER_SAME) <= set(SOURCE_OPTIONS)
    assert set(AUTO_LOADER_ALIASES.values()) <= set(SOURCE_OPTIONS)
    assert {v.split(" ")[0] for v in AUTO_LOADER_RENAMED.values()} <= set(SOURCE_OPTIONS)


# ---- a flag and an option that say two things ----

@pytest.mark.parametrize("options, message", [
    ({"fileFormat": "json"}, "--option fileFormat=json clashes with --format csv"),
    ({"cloudFiles.queueUrl": "https://sqs.eu-west-1.amazonaws.com/999999999999/other"}, "clashes with --queue-url"),
    ({"spark.s3conn.queueRegion": "us-west-2"}, "clashes with --region eu-west-1"),
])
def test_an_option_that_contradicts_a_flag_is_refused(options, message):
    from s3sqs.config.options import job_source_options

    with pytest.raises(OptionError, match=re.escape(message)):
        job_source_options("csv", BASE["queueUrl"], "s3://ck/q", options, region="eu-west-1")


def test_an_option_that_repeats_a_flag_is_accepted():
    from s3sqs.config.options import job_source_options

    raw = job_source_options("csv", BASE["queueUrl"], "s3://ck/q", {"fileFormat": "CSV", "queueUrl": BASE["queueUrl"]})
    assert parse_options(raw).file_format == "csv"
    raw = job_source_options("csv", BASE["queueUrl"], "s3://ck/q", {"cloudFiles.format": "csv"})
    assert parse_options(raw).file_format == "csv"


@pytest.mark.parametrize("key", ["schemaLocation", "cloudFiles.schemaLocation", "CLOUDFILES.SCHEMALOCATION",
                                 "spark.s3conn.quarantineLocation", "stateLocation"])
def test_an_option_naming_one_of_the_checkpoint_s_places_replaces_the_default_under_any_spelling(key):
    from s3sqs.config.options import job_source_options

    opts = parse_options(job_source_options("csv", BASE["queueUrl"], "s3://ck/q", {key: "s3://mine/place"}))
    chosen = {"schemaLocation": opts.schema_location, "quarantineLocation": opts.quarantine_location,
              "stateLocation": opts.state_location}
    assert [name for name, value in chosen.items() if value == "s3://mine/place"] == [option_name(key)]
    assert [value.startswith("s3://ck/q/") for value in chosen.values()].count(True) == 2


def test_an_auto_loader_name_that_contradicts_a_flag_names_the_flag():
    from s3sqs.config.options import job_source_options

    with pytest.raises(OptionError, match=re.escape("--option cloudFiles.format=json clashes with --format csv")):
        job_source_options("csv", BASE["queueUrl"], "s3://ck/q", {"cloudFiles.format": "json"})


def test_an_unknown_option_is_matched_against_the_source_s_and_its_format_s_options():
    with pytest.raises(OptionError, match=re.escape("unknown option 'heder': neither a source option nor a reader "
                                                    "option of fileFormat csv; did you mean 'header'?")):
        parse_options({**BASE, "heder": "true"})
    with pytest.raises(OptionError, match=re.escape("did you mean 'rowTag'?")):  # an XML option, read as XML
        parse_options({**BASE, "fileFormat": "xml", "rowTags": "r"})


def test_job_help_lists_the_source_options():
    from s3sqs.job.flags import job_parser

    text = job_parser().format_help()
    assert "source options (--option KEY=VALUE" in text and "maxFilesPerTrigger" in text and "rowTag" in text
    assert "cloudFiles.<name>" in text


def test_job_py_refuses_a_trigger_interval_spark_would_refuse_only_after_start_up(capsys):
    from s3sqs.job.flags import parse_job_args

    with pytest.raises(SystemExit) as e:
        parse_job_args(["--queue-url", BASE["queueUrl"], "--format", "csv", "--checkpoint", "/tmp/ck",
                        "--trigger-interval", "ten seconds"])
    assert e.value.code == 2 and "'ten seconds' is not a duration" in capsys.readouterr().err


def test_the_job_takes_the_endpoint_from_aws_endpoint_url_unless_the_flag_gives_one(monkeypatch):
    from s3sqs.job.flags import parse_job_args
    from s3sqs.job.preflight import source_options
    from s3sqs.sinks.kinds import from_flags

    argv = ["--queue-url", BASE["queueUrl"], "--format", "csv", "--checkpoint", "/tmp/ck", "--output", "/tmp/out"]
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    assert parse_job_args(argv).endpoint_url is None
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:4566")
    args = parse_job_args(argv)
    assert source_options(args)["endpointUrl"] == "http://127.0.0.1:4566"
    delta = parse_job_args([*argv[:-2], "--sink", "delta", "--output", "s3://lake/orders"])
    assert from_flags(delta).table.endpoint.url == "http://127.0.0.1:4566"  # the table writers' too
    assert parse_job_args(argv + ["--endpoint-url", "http://127.0.0.1:5000"]).endpoint_url == "http://127.0.0.1:5000"


def test_latest_first_needs_a_file_limit_per_batch():
    base = {"fileFormat": "csv", "queueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/q",
            "stateLocation": "s3://b/state"}
    assert parse_options({**base, "latestFirst": "true"}).latest_first is True
    with pytest.raises(OptionError, match="set maxFilesPerTrigger to a number of files"):
        parse_options({**base, "latestFirst": "true", "maxFilesPerTrigger": "-1"})
    with pytest.raises(OptionError, match="leave maxBytesPerTrigger out"):
        parse_options({**base, "latestFirst": "true", "maxBytesPerTrigger": "1g"})


def test_an_option_given_under_both_spellings_must_agree():
    o = parse_options({**BASE, "cloudFiles.maxFilesPerTrigger": "7", "maxFilesPerTrigger": "7"})
    assert o.max_files_per_trigger == 7
    with pytest.raises(OptionError, match="'maxFilesPerTrigger' is given twice.*'7' and '9'"):
        parse_options({**BASE, "cloudFiles.maxFilesPerTrigger": "7", "maxFilesPerTrigger": "9"})
