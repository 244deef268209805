"""Spark's own Delta and Iceberg writers (`--table-writer spark`), as an EMR user writes a stream; each kind
(kinds/delta.py, kinds/iceberg.py) holds its writer's settings and jars, and this module what they share.

Exactly once comes from the writers themselves: Delta's streaming sink records (query id, batch id) as a
transaction in the same log commit as the batch's files, and Iceberg's streaming append stores them in the
snapshot summary (`spark.sql.streaming.queryId`, `spark.sql.streaming.epochId`); both skip a batch Spark
replays after a crash. This source replays a batch with the same files, so the rows are the same too.

New columns (the job restarts its query with the evolved schema) are added by the writers: Delta with
`mergeSchema`, Iceberg with `merge-schema` on a table that accepts any schema (a table the job creates
does; an existing one needs the property `write.spark.accept-any-schema=true`).
"""
from __future__ import annotations

from .target import SinkError


def check_classpath(spark, kind: str, writer_class: str, emr_jars: tuple[str, ...]) -> None:
    """Spark only warns when a session extension is missing; say plainly that the writer's jars are not there."""
    from py4j.protocol import Py4JJavaError

    try:
        spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader().loadClass(writer_class)
    except Py4JJavaError:
        raise SinkError(f"--table-writer spark: Spark's {kind} writer ({writer_class}) is not on Spark's classpath; "
                        f"give spark-submit its jars (on EMR: --conf spark.jars={','.join(emr_jars)}; "
                        f"locally, after make setup: --jars $(python -m devtools.jars path {kind})), or use "
                        "--table-writer python") from None
