"""The validated options are a frozen, typed value with exactly the model's fields, and pickle light."""
import dataclasses
import pickle
import subprocess
import sys

import pytest

from s3sqs.config.options import OptionsModel, parse_options
from s3sqs.config.source_options import SourceOptions

BASE = {"fileFormat": "csv", "queueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/q",
        "stateLocation": "s3://ck/q/source-state"}


def test_the_value_has_exactly_the_model_s_fields():
    assert {f.name for f in dataclasses.fields(SourceOptions)} == set(OptionsModel.model_fields)


def test_it_is_frozen_typed_and_survives_pickling():
    opts = parse_options({**BASE, "maxFilesPerTrigger": "7", "sep": ";"})
    assert (opts.max_files_per_trigger, opts.queue_region, opts.reader_options["sep"]) == (7, "eu-west-1", ";")
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.max_files_per_trigger = 8
    again = pickle.loads(pickle.dumps(opts))
    assert again == opts and hash(again) == hash(opts)
    assert opts.endpoint.max_attempts == opts.max_retries + 1


def test_unpickling_it_does_not_import_the_validator():
    data = pickle.dumps(parse_options(BASE))
    code = ("import pickle, sys; pickle.loads(sys.stdin.buffer.read()); "
            "print('pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], input=data, capture_output=True, check=True)
    assert out.stdout.strip() == b"False"
