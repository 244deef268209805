"""Retrying a call that failed for a reason worth another try, with exponential backoff and jitter
(tenacity). Which errors are worth it is always the caller's decision: `retryable`."""
from __future__ import annotations

import logging
import random
import time
from typing import Callable, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_random_exponential

T = TypeVar("T")


def retry_call(fn: Callable[[], T], *, what: str, attempts: int, retryable: Callable[[BaseException], bool],
               log: logging.Logger, base_seconds: float = 0.5, max_seconds: float = 30,
               sleep: Callable[[float], None] = time.sleep) -> T:
    """fn(), called again while it raises a retryable error, at most `attempts` times in all; the last
    error is raised as it is. The first call goes straight through: the retry machinery costs a call that
    succeeds nothing (the executors make one per file)."""
    try:
        return fn()
    except Exception as e:
        if attempts < 2 or not retryable(e):
            raise
        delay = random.uniform(0, min(max_seconds, base_seconds * 2))
        log.warning("s3-sqs: %s failed (%s: %s); attempt 2 of %d in %.1f s", what, type(e).__name__, str(e)[:200],
                    attempts, delay)
        sleep(delay)

    def before_sleep(state) -> None:
        e = state.outcome.exception()
        log.warning("s3-sqs: %s failed (%s: %s); attempt %d of %d in %.1f s", what, type(e).__name__,
                    str(e)[:200], state.attempt_number + 2, attempts, state.next_action.sleep)

    retrying = Retrying(stop=stop_after_attempt(attempts - 1), retry=retry_if_exception(retryable),
                        wait=wait_random_exponential(multiplier=base_seconds * 2, max=max_seconds),
                        before_sleep=before_sleep, sleep=sleep, reraise=True)
    return retrying(fn)
