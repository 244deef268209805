"""Exact versions of everything that goes into the EMR dependency archive.

pyproject.toml pins the connector's direct dependencies; this pins their dependencies too, so that an
archive built today and one built in a month hold the same files. `package-job` refuses to build
when the two disagree or when a wheel needs something missing here, and says what to add.
"""

# Transitive closure of pyproject.toml's [project] dependencies, for CPython 3.11 and 3.12 on Linux.
PINS = {
    "annotated-types": "0.8.0",
    "arro3-core": "0.9.1",
    "backports-zstd": "1.8.0",
    "boto3": "1.44.5",
    "botocore": "1.44.5",
    "cachetools": "8.0.1",
    "certifi": "2026.10.18",
    "charset-normalizer": "3.5.2",
    "click": "8.5.1",
    "cramjam": "2.14.0",
    "deltalake": "1.6.6",
    "deprecated": "1.3.1",
    "fastavro": "1.13.1",
    "fsspec": "2026.9.0",
    "idna": "3.20",
    "jmespath": "1.1.0",
    "markdown-it-py": "4.3.0",
    "mdurl": "0.1.2",
    "mmh3": "5.3.1",
    "numpy": "2.4.6",
    "orjson": "3.13.0",
    "pyarrow": "22.0.0",
    "polars": "2.1.0",
    "polars-runtime-32": "2.1.0",
    "pydantic": "2.14.3",
    "pydantic-core": "2.50.4",
    "pygments": "2.21.0",
    "pyiceberg": "0.12.0",
    "pyparsing": "3.3.3",
    "pyroaring": "1.2.0",
    "python-dateutil": "2.9.0.post0",
    "requests": "2.34.2",
    "rich": "15.0.0",
    "rocksdict": "0.3.29",
    "s3transfer": "0.19.3",
    "six": "1.17.0",
    "strictyaml": "1.7.3",
    "tenacity": "9.2.1",
    "typing-extensions": "4.16.0",
    "typing-inspection": "0.4.5",
    "urllib3": "2.8.0",
    "wrapt": "2.5.2",
    "zstandard": "0.25.0",
}

# EMR's runtime provides these; a copy in the archive would shadow the runtime's own Spark.
PROVIDED_BY_RUNTIME = frozenset({"pyspark", "py4j"})
