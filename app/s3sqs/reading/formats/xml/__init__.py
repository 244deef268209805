"""XML as Spark's XML reader reads it: reader.py, with the fast path for plain files (fast.py) and the
step-by-step one (records.py, events.py, convert.py, values.py), and Spark's inference (inference.py)."""
from .reader import COMPRESSION, RANDOM_ACCESS, block_end, infer, read, read_exact

__all__ = ["COMPRESSION", "RANDOM_ACCESS", "block_end", "infer", "read", "read_exact"]
