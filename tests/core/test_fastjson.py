"""The hot paths' JSON codec writes what the standard library writes, byte for byte, so state and commit
markers written before and after it read and compare the same."""
from __future__ import annotations

import json
import random

import pytest

from s3sqs.core import fastjson
from s3sqs.core.files import S3File
from s3sqs.state import markers


def _compact(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def test_compact_output_is_json_s_for_every_kind_of_character():
    rng = random.Random(7)
    # Every ASCII character (controls, quote, backslash, DEL), and some beyond (accents, CJK, emoji).
    alphabet = [chr(c) for c in range(128)] + ["é", "ß", "日", "€", "\U0001F600", "\u2028"]
    for _ in range(5000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        obj = {"key": s, "n": [rng.randint(0, 2**64 - 1), -rng.randint(0, 2**63), True, None, s]}
        assert fastjson.dumps_compact(obj) == _compact(obj), repr(s)


@pytest.mark.parametrize("obj", [{"big": 2**64}, {"neg": -2**63 - 1}, {1: "int key"}, [[]], {}])
def test_what_orjson_refuses_is_written_by_json(obj):
    assert fastjson.dumps_compact(obj) == _compact(obj)


def test_index_records_and_markers_keep_their_bytes():
    files = [S3File("b", "data/plain.json", 10, "e1", None, 1_700_000_000_000, "ObjectCreated:Put", 1),
             S3File("b", "données/日本/x\x7f.json", None, None, "v1", None, "Listing", 2, "file")]
    for f in files:
        d = {k: v for k, v in f.__dict__.items() if v is not None and not (k == "scheme" and v == "s3")}
        assert f.to_json() == _compact(d)
        assert S3File.from_json(f.to_json()) == f
        assert S3File.from_json(_compact(d)) == f  # a record written before reads the same
    m = markers.marker_of(1, 2, 123, files)
    old = _compact({"v": 1, "first": 1, "last": 2, "committed_ms": 123,
                    "files": [["b", "data/plain.json", "e1", 10]]})
    assert markers.encode(m) == old and markers.decode(old) == m


def test_loads_refuses_what_is_not_json():
    for bad in ["", "{", "NaN", "[1,]", None]:
        with pytest.raises(fastjson.DecodeError):
            fastjson.loads(bad)
    assert fastjson.loads('{"a":[1,"é",null]}') == {"a": [1, "é", None]}
