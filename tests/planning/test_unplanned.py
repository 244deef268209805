"""The files recorded and not planned yet: a plan takes them only when every one of its range is kept."""
from __future__ import annotations

from s3sqs.core.files import S3File
from s3sqs.planning import unplanned
from s3sqs.planning.unplanned import Unplanned


def _files(first: int, last: int) -> list[S3File]:
    return [S3File("b", f"k{n}", n).numbered(n) for n in range(first, last + 1)]


def test_a_plan_takes_its_range_and_nothing_up_to_its_end_stays():
    u = Unplanned()
    u.add(_files(1, 10))
    assert u.take(0, 4) == _files(1, 4)
    assert u.take(0, 4) is None  # taken already: the caller reads the index
    assert u.take(4, 10) == _files(5, 10) and len(u) == 0


def test_a_gap_means_none_and_older_leftovers_go():
    u = Unplanned()
    u.add(_files(1, 3))
    u.add(_files(5, 8))
    assert u.take(0, 6) is None  # 4 is missing
    assert len(u) == 2 and u.take(6, 8) == _files(7, 8)
    u.add(_files(9, 12))
    assert u.take(10, 12) == _files(11, 12) and len(u) == 0  # 9 and 10 were planned another way


def test_bounded_and_forgotten_on_renumbering(monkeypatch):
    monkeypatch.setattr(unplanned, "MAX_KEPT", 5)
    u = Unplanned()
    u.add(_files(1, 8))
    assert len(u) == 5 and u.take(0, 8) is None and len(u) == 0
    u.add(_files(9, 10))
    u.forget()
    assert u.take(8, 10) is None
