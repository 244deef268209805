"""The source's durable state. Written by Spark's streaming runner (planning/), read by the job, the
operator tools and notebooks; the executors write only quarantine records in its layout.

- `keys`: the RocksDB key layout and its codec; `index`: the file index (`FileIndex` writes,
  `IndexReader` reads); `snapshots`: its durable incremental snapshots; `store`: a local or S3 location;
- `markers`: what a consumer committed, file by file, for the stack's source cleaner;
- `quarantine`: where a batch's file problems are recorded; `checkpoint`: Spark's own checkpoint, read;
- `view`: the state file by file, read-only, for source-state and notebooks.
"""
