"""A transform for the job tests, as a user would write one: `--transform tests.support.transforms:tag_rows`."""
from pyspark.sql import functions as F


def tag_rows(df):
    """Upper-case the name and keep only the file name of the `_file_path` metadata column."""
    return (df.withColumn("name", F.upper("name"))
              .withColumn("source_file", F.regexp_extract("_file_path", r"([^/]+)$", 1))
              .drop("_file_path"))


def not_a_transform(df, extra):
    return df


def returns_a_string(df):
    return "not a DataFrame"


def explode_records(df):
    """CloudTrail's shape: one document per file with a `Records` array; one row per event, dated."""
    return (df.select(F.explode("Records").alias("r"))
              .select("r.*")
              .withColumn("date", F.date_format("eventTime", "yyyy-MM-dd")))
