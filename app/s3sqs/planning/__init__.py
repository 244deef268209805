"""Planning, on the driver, in Spark's streaming runner process: the Spark adapter (`source`), a slim
`controller` behind Spark's offset calls, and the pieces it wires, each with one job:

- `intake` (one thread: receive, record, delete) and `queue` (SQS calls); `events` (pure: message bodies
  to file records);
- `backfill` (one thread: list basePath) and `listing` (pages of a listing);
- `ledger` (the index and its snapshots, under one lock); `commits` (what follows a commit);
  `reprocess` (re-queue planned batches);
- `planner` (pure: every decision, with unit tests); `slots` (pure: how many partitions a batch needs at
  least, from the executor cores the job reports live).

`source.read` runs in the executors and hands the partition to s3sqs.reading; nothing else here does.
"""
