"""How many partitions a batch is packed into at least, from the live executor cores (planning/slots.py)."""
import pytest

from s3sqs.config.options import OptionError, parse_options
from s3sqs.planning.slots import MAX_AGE_SECONDS, MAX_SLOTS, LiveCores, batch_slots, decode

NOW = 1_800_000_000.0


def live(cores: int, age: float = 1.0, executors: int = 2) -> LiveCores:
    return LiveCores(cores, executors, NOW - age)


@pytest.mark.parametrize("figure, min_partitions, expected", [
    (live(2), None, 2),                 # two executors of one core: two partitions
    (live(1), None, 1),                 # one lost: one
    (live(48), None, 48),               # executors added: more
    (live(3), 8, 8),                    # minPartitions stays a floor
    (live(16), 8, 16),                  # and only a floor
    (live(10 ** 6), None, MAX_SLOTS),   # bounded, whatever the cluster reports
])
def test_the_live_cores_decide_within_bounds(figure, min_partitions, expected):
    assert batch_slots(figure, min_partitions, fallback=4, now=NOW) == expected


@pytest.mark.parametrize("figure", [None, live(0), live(6, age=MAX_AGE_SECONDS + 1)])
def test_without_a_live_figure_min_partitions_or_the_fallback_decide(figure):
    # None: no file (the bare source, or before the job's first figure); 0 cores: no executor registered
    # at that moment; stale: the job stopped refreshing it.
    assert batch_slots(figure, None, fallback=4, now=NOW) == 4
    assert batch_slots(figure, 3, fallback=4, now=NOW) == 3


def test_the_figure_round_trips_and_a_damaged_one_is_refused_saying_what_is_wrong():
    assert decode(live(5).encode()) == live(5)
    for text, why in [("", "JSONDecodeError"), ('{"cores": 2}', "KeyError"), ('{"cores": "x", "executors": 1, '
                      '"at": 1}', "ValueError"), ('{"cores": -1, "executors": 1, "at": 1}', "negative")]:
        with pytest.raises(ValueError, match=why):
            decode(text)


def test_the_option_takes_an_absolute_local_path_only():
    base = {"fileFormat": "csv", "queueUrl": "https://sqs.eu-west-1.amazonaws.com/123456789012/q",
            "stateLocation": "s3://ck/state/"}
    assert parse_options({**base, "executorCoresFile": "/tmp/cores.json"}).executor_cores_file == "/tmp/cores.json"
    assert parse_options(base).executor_cores_file is None
    for bad in ("cores.json", "s3://b/cores.json"):
        with pytest.raises(OptionError, match="executorCoresFile.*absolute local path on the driver"):
            parse_options({**base, "executorCoresFile": bad})
