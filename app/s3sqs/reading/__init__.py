"""Reading, on the executors' Python workers: a partition's files to Arrow batches in the declared schema.
pyarrow only: no boto3, no driver code, nothing from s3sqs.planning (tests/test_architecture.py checks).

- `reader`: a partition's files, several at once, and what becomes of a file that cannot be read;
- `formats/`: one module per file format behind one interface (`formats/__init__.py`);
- `conform`: rows in exactly the declared schema, with partition values and file metadata;
- `filesystems`: pyarrow filesystems, transient-fault retries; `quarantine_writer`: records of bad files.
"""
