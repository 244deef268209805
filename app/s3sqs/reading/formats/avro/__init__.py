"""Avro as Spark's Avro reader reads it: reader.py, with fastavro for the blocks, polars' columnar decoding
where it matches Spark (columnar.py), split files' pieces (pieces.py) and Spark's types (schema.py)."""
from .reader import COMPRESSION, RANDOM_ACCESS, infer, read, read_parts, warm

__all__ = ["COMPRESSION", "RANDOM_ACCESS", "infer", "read", "read_parts", "warm"]
