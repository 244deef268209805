"""How far the intake may receive ahead of planning, and how many receives a round makes (`intake_room`,
`next_polls`, `poll_wait`, `polls_for`). Pure: the intake (intake.py) asks before each round."""
from __future__ import annotations

SQS_BATCH = 10                 # messages per ReceiveMessage / DeleteMessageBatch: SQS's own limit
MAX_PENDING_FILES = 10_000     # files the intake may record ahead of planning, at most
AHEAD_BATCHES = 2              # ... and no more than this many batches' worth
ROUND_WAVES = 4                # a round of receives is at most this many waves of sqs.maxConcurrency each


def intake_room(pending: int, max_files: int | None, latest_first: bool = False) -> int:
    """How many more files the intake may record ahead of planning: a couple of batches, bounded, so a
    backlog stays in the queue (where it is visible and alarmed on) rather than in the index. With
    latestFirst the bound alone: a fresh file behind a backlog must reach the index to be taken first (SQS
    has no order to receive it by)."""
    cap = MAX_PENDING_FILES if max_files is None or latest_first else min(MAX_PENDING_FILES, AHEAD_BATCHES * max_files)
    return max(0, cap - pending)


def next_polls(polls: int, received: int, max_concurrency: int) -> int:
    """Receives for the next round: double while every receive comes back full, halve when the queue runs
    dry. Each receive is billed, so a trickle costs one poll at a time; a backlog goes wide, up to
    ROUND_WAVES times `max_concurrency` (that many run at once): a round's files are recorded with one
    snapshot, which costs what many receives do, so a backlog drains in few, big rounds."""
    if received >= polls * SQS_BATCH:
        return min(max_concurrency * ROUND_WAVES, polls * 2)
    return max(1, polls // 2)


def poll_wait(polls: int, long_poll_seconds: int) -> int:
    """A lone receive waits the whole long poll: the queue looked dry, and waiting is free. Parallel receives
    expect a backlog and wait at most a second: a round lasts as long as its slowest receive, and one that
    finds the queue dry mid-round must not hold the others for a whole long poll."""
    return long_poll_seconds if polls == 1 else min(1, long_poll_seconds)


def polls_for(room: int, polls: int) -> int:
    """No more receives than the room left can take."""
    return max(1, min(polls, -(-room // SQS_BATCH)))
