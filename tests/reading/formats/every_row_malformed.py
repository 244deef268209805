"""The one documented difference from Spark's PERMISSIVE readers (docs/formats.md, "Every row malformed"): a
file in which every row is malformed is committed by Spark as rows (nulls where values do not fit) and set
aside here, quarantined with the reason. Declaring the rescued-data column keeps such rows, and then they are
Spark's, value for value: the parity cases whose files are like that still check every value."""
from __future__ import annotations

from pathlib import Path

from s3sqs.state import quarantine
from s3sqs.state.store import open_store
from tests.support.parity import canonical, source_rows, spark_rows

RESCUED = "_rescued_data"  # the option's default name: declaring it in the schema is what keeps the rows


def assert_set_aside_where_spark_keeps_rows(spark, fmt: str, paths: list[Path], ddl: str,
                                            options: dict[str, str] | None = None) -> list[dict]:
    """Spark gives rows; this source gives none and quarantines every file with the reason and a copy; with
    the rescued-data column declared, it gives Spark's rows. Returns Spark's rows."""
    theirs = spark_rows(spark, fmt, paths, ddl, options)
    assert theirs, "Spark commits the file's rows (nulls where values do not fit)"
    state = Path(paths[0]).parent / "_set_aside_state"
    assert source_rows(spark, fmt, paths, ddl, options, state) == []
    records = quarantine.read_records(open_store(str(state / "quarantine"), None), 1)
    assert [r["status"] for r in records] == ["quarantined"] * len(paths), records
    for r in records:
        assert r["error"].startswith(f"MalformedFile: not {fmt} as declared: every one of its "), r["error"]
        assert Path(r["copy"]).read_bytes() == Path(r["file"].removeprefix("file://")).read_bytes()
    kept = source_rows(spark, fmt, paths, f"{ddl}, {RESCUED} STRING", options, Path(paths[0]).parent / "_kept")
    assert canonical([{k: v for k, v in r.items() if k != RESCUED} for r in kept]) == canonical(theirs)
    return theirs
