"""JSON as Spark's JSON reader reads it: reader.py, with pyarrow's fast path (fast.py), the type-guided slow
path (rows.py, walk.py) and Spark's inference (inference.py)."""
from .reader import COMPRESSION, RANDOM_ACCESS, infer, read

__all__ = ["COMPRESSION", "RANDOM_ACCESS", "infer", "read"]
