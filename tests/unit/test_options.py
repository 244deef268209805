import pytest

from s3sqs.config.options import OptionError, parse_options, region_from_queue_url

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
    ({"fileFormat": "avrow"}, "fileFormat' must be one of csv, json, parquet, orc, avro.*did you mean 'avro'"),
    ({"schemaEvolutionMode": "addNewColumn"}, "did you mean 'addNewColumns'"),
    ({"schemaHints": "ts TIMESTAMP,"}, "schemaHints' must list columns as DDL"),
    ({"mode": "PERMISSIVE", "fileFormat": "parquet"}, "'mode' does not apply to fileFormat parquet"),
    ({"fileFormat": "xml"}, "'rowTag' is required"),
    ({"sep": ";", "delimiter": ","}, "given twice, under two names"),
    ({"multiLine": "perhaps"}, "option 'multiLine' must be true or false"),
    ({"encoding": "utf-99"}, "option 'encoding' must be a character encoding"),
    ({"sqs.longPollingWaitTimeSeconds": "21"}, "0 to 20"),
    ({"maxFilesPerTrigger": "ten"}, "whole number"),
    ({"maxFilesPerTrigger": "0"}, "-1 for unlimited"),
    ({"maxFileAge": "soon"}, "duration"),
    ({"maxBytesPerTrigger": "lots"}, "size like"),
    ({"queueUrl": "my-queue"}, "SQS queue URL"),
    ({"reprocessStartBatchId": "3"}, "given together"),
    ({"reprocessStartBatchId": "3", "reprocessEndBatchId": "1"}, "before"),
    ({"sqs.keepMessageForConsumerError": "maybe"}, "true or false"),
    ({"delimiter": ";;"}, "single character"),
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
