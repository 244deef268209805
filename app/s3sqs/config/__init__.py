"""Configuration, in whichever process reads it: every settings surface (the source's options, the job's
sink flags, the stack's cdk.json) becomes one typed, validated object, built from strings, before any AWS
call; a wrong value is a one-line `UsageError` naming it and the fix. The schema DDL parser lives here too.

- `fields`: the value grammar all surfaces share (booleans, ranges, durations, sizes, choices), on pydantic;
- `options`: the source's options (`SourceOptions`);
- `format_options`: each format's reader options, Spark's names and defaults (pure: the executors read it);
- `clean`: the source cleaner's settings (cdk.json's sourceCleaning; refused as a query's options);
- `ddl`: schema strings, parsed without Spark.
"""
