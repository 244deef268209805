"""s3-sqs: a Spark Structured Streaming source for S3 files announced through SQS, and the job that runs it.

Packages by the process that runs them (docs/layout.md):
- `core`: what every process shares (the file record, vocabulary, units, endpoint, errors);
- `config`: settings, validated before any AWS call (source options, DDL schemas);
- `planning`: the driver side, in Spark's streaming runner;
- `state`: the durable file index and what reads it;
- `reading`: the executors' Python workers;
- `job`: the job's own process; `sinks`: where the job writes;
- `cleaning`: the source cleaner (`source-state clean`), outside the stream.
"""
