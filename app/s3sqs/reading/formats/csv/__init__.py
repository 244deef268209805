"""CSV as Spark's CSV reader reads it: reader.py, with pyarrow's fast path (fast.py) and Spark's own
tokenizing (tokens.py), conversion (values.py, rows.py), inference (inference.py) and block ends (blocks.py)."""
from .blocks import block_end
from .inference import infer
from .reader import COMPRESSION, RANDOM_ACCESS, read

__all__ = ["COMPRESSION", "RANDOM_ACCESS", "block_end", "infer", "read"]
