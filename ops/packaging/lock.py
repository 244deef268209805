"""Exact versions of everything that goes into the EMR dependency archive.

pyproject.toml pins the connector's direct dependencies; this pins their dependencies too, so that an
archive built today and one built in a month hold the same files. `scripts/package-job` refuses to build
when the two disagree or when a wheel needs something missing here, and says what to add.
"""

# Transitive closure of pyproject.toml's [project] dependencies, for CPython 3.11 and 3.12 on Linux.
PINS = {
    "boto3": "1.44.5",
    "botocore": "1.44.5",
    "jmespath": "1.1.0",
    "pyarrow": "22.0.0",
    "python-dateutil": "2.9.0.post0",
    "rocksdict": "0.3.29",
    "s3transfer": "0.19.3",
    "six": "1.17.0",
    "urllib3": "2.8.0",
}

# EMR's runtime provides these; a copy in the archive would shadow the runtime's own Spark.
PROVIDED_BY_RUNTIME = frozenset({"pyspark", "py4j"})
