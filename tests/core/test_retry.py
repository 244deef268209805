"""core.retry: a call is retried only for the errors the caller says are worth it, at most `attempts` times."""
import logging

import pytest

from s3sqs.core.retry import retry_call

LOG = logging.getLogger("test")


class Flaky(OSError):
    pass


def calls_that_fail(n: int, error=Flaky("slow down")):
    seen = []

    def fn():
        seen.append(1)
        if len(seen) <= n:
            raise error
        return len(seen)
    return fn, seen


def test_a_transient_failure_is_retried_with_growing_waits_until_the_call_succeeds():
    fn, seen = calls_that_fail(3)
    sleeps = []
    assert retry_call(fn, what="x", attempts=5, retryable=lambda e: isinstance(e, Flaky), log=LOG,
                      base_seconds=0.5, sleep=sleeps.append) == 4
    assert len(seen) == 4 and len(sleeps) == 3 and all(0 <= s <= 30 for s in sleeps)


def test_it_gives_up_after_the_attempts_and_raises_the_last_error():
    fn, seen = calls_that_fail(10)
    with pytest.raises(Flaky):
        retry_call(fn, what="x", attempts=3, retryable=lambda e: True, log=LOG, sleep=lambda s: None)
    assert len(seen) == 3


def test_an_error_not_worth_retrying_is_raised_at_once():
    fn, seen = calls_that_fail(1, ValueError("corrupt"))
    with pytest.raises(ValueError):
        retry_call(fn, what="x", attempts=5, retryable=lambda e: isinstance(e, Flaky), log=LOG, sleep=lambda s: None)
    assert len(seen) == 1


def test_a_second_failure_of_another_kind_ends_the_retries():
    errors = [Flaky("a"), ValueError("b")]

    def fn():
        raise errors.pop(0)
    with pytest.raises(ValueError):
        retry_call(fn, what="x", attempts=5, retryable=lambda e: isinstance(e, Flaky), log=LOG, sleep=lambda s: None)
