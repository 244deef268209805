"""Parsing of real message bodies (captured from a moto server) and hand-made edge cases."""
import json
from pathlib import Path

import pytest

from s3sqs.planning.events import MessageParseError, parse_body

BODIES = json.loads((Path(__file__).resolve().parents[2] / "tests" / "data" / "moto_message_bodies.json").read_text())


def test_raw_s3_event_decodes_key_and_reads_metadata():
    test_event, created = BODIES["s3_raw"]
    assert parse_body(test_event).files == ()
    assert parse_body(test_event).ignored == ("s3:TestEvent",)
    (f,) = parse_body(created).files
    assert (f.bucket, f.key) == ("fx-raw", "in/dir one/naïve file+plus.csv")
    assert f.size == 4 and f.etag and f.event_name == "ObjectCreated:Put"
    assert f.event_time.year >= 2026 and f.event_time.tzinfo is not None


def test_sns_envelope_is_unwrapped():
    test_event, created = BODIES["sns_envelope"]
    assert parse_body(test_event).ignored == ("s3:TestEvent",)
    (f,) = parse_body(created).files
    assert (f.bucket, f.key) == ("fx-sns", "x/y z.json")


def test_eventbridge_object_created():
    (body,) = BODIES["eventbridge"]
    (f,) = parse_body(body).files
    assert (f.bucket, f.key, f.size) == ("fx-eb", "eb/file 1.parquet", 4)
    assert f.etag == "2b85af6abf9be8e9a8bb4d661cde9488"


def test_eventbridge_other_detail_types_are_ignored():
    body = json.dumps({"source": "aws.s3", "detail-type": "Object Deleted", "detail": {}})
    assert parse_body(body).files == () and "Object Deleted" in parse_body(body).ignored[0]


def _record(key, name="ObjectCreated:Put", bucket="b"):
    return {"eventName": name, "eventTime": "2026-01-01T00:00:00.000Z",
            "s3": {"bucket": {"name": bucket}, "object": {"key": key, "size": 10, "eTag": "e"}}}


def test_every_record_is_read_and_non_created_events_skipped():
    body = json.dumps({"Records": [_record("a+b.csv"), _record("c%2Bd.csv"), _record("gone", "ObjectRemoved:Delete")]})
    parsed = parse_body(body)
    assert [f.key for f in parsed.files] == ["a b.csv", "c+d.csv"]
    assert len(parsed.ignored) == 1 and "ObjectRemoved" in parsed.ignored[0]


@pytest.mark.parametrize("body, reason", [
    ("not json", "not JSON"),
    ("[1, 2]", "expected an object"),
    ('{"hello": 1}', "not an S3 event"),
    ('{"Records": {}}', "not a list"),
    (json.dumps({"Records": [{"eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": "b"}, "object": {}}}]}),
     "key is missing"),
    (json.dumps({"Records": [dict(_record("k"), eventTime="yesterday")]}), "ISO-8601"),
    (json.dumps({"Type": "Notification", "Message": "{broken"}), "inside SNS envelope"),
])
def test_malformed_bodies_say_why(body, reason):
    with pytest.raises(MessageParseError, match=reason):
        parse_body(body)
