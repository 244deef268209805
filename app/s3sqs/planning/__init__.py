"""Planning, on the driver, in Spark's streaming runner process: the Spark adapter (`source`), a slim
`controller` behind Spark's offset calls, and the pieces it wires, each with one job:

- `intake` (one thread: receive, record, delete), `intake_pacing` (pure: how far ahead it receives) and
  `queue` (SQS calls); `events` (pure: message bodies to file records); `fates` (pure: what becomes of each
  message and file: new, duplicate, too old, filtered);
- `backfill` (one thread: list basePath, and when) and `listing` (pages of a listing); `inventory` (an S3
  Inventory report instead of a listing);
- `ledger` (the index and its snapshots, under one lock); `commits` (what follows a commit, and when old
  state is forgotten); `reprocess` (re-queue planned batches);
- `batch_limits` (pure: how big a batch is, latestFirst's order); `partitions` (pure: a batch's files and
  pieces packed into Spark partitions); `slots` (pure: how many partitions a batch needs at least, from the
  executor cores the job reports live).

`source.read` runs in the executors and hands the partition to s3sqs.reading; nothing else here does.
"""
