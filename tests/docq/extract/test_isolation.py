"""docq/extract/isolation.py: a reader that hangs, spins, crashes or eats memory becomes that
document's ExtractionFailed within its limit, and the pool goes on reading the next one.

The misbehaving readers (hostile.py) stand in for a C parser on a hostile file: the limits
are the kernel's (a timer signal, RLIMIT_AS), so what ends them is real."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator

import pytest

from docq.errors import ExtractionFailed
from docq.extract import Extracted, Limits, extract_isolated
from docq.extract.isolation import ExtractorPool, Target
from tests.docq.extract import hostile

MakePool = Callable[..., ExtractorPool]  # (target, processes=1)
LIMITS = Limits(timeout_s=0.2, memory_mib=256)


@pytest.fixture
def make_pool() -> Iterator[MakePool]:
    pools: list[ExtractorPool] = []

    def make(target: Target, processes: int = 1) -> ExtractorPool:
        pool = ExtractorPool(processes, target=target)
        pools.append(pool)
        return pool

    yield make
    for pool in pools:
        pool.close()


def failure(pool: ExtractorPool, data: bytes = b"x") -> ExtractionFailed:
    with pytest.raises(ExtractionFailed) as caught:
        pool.extract(data, "text/plain", LIMITS)
    return caught.value


@pytest.mark.parametrize("reader", [hostile.hang_in_c, hostile.spin])
def test_a_reader_that_never_returns_is_a_timeout_and_its_child_is_replaced(
    make_pool: MakePool, reader: Target
) -> None:
    pool = make_pool(reader)
    error = failure(pool)
    assert error.code == "timeout"
    assert "its timer ended it" in error.message  # the kernel's timer, not the backstop
    assert failure(pool).code == "timeout"  # a fresh child took the next one


def test_a_reader_that_crashes_is_unreadable_and_the_next_document_is_read(
    make_pool: MakePool,
) -> None:
    pool = make_pool(hostile.by_text)
    before = pool.extract(b"pid", "text/plain", LIMITS).text
    assert failure(pool, b"crash").code == "unreadable"
    after = pool.extract(b"pid", "text/plain", LIMITS).text
    assert after != before  # the dead child was replaced
    assert pool.extract(b"an invoice", "text/plain", LIMITS).text == "an invoice"


def test_children_are_reused_across_documents(make_pool: MakePool) -> None:
    pool = make_pool(hostile.pid)
    pids = {pool.extract(b"x", "text/plain", LIMITS).text for _ in range(5)}
    assert len(pids) == 1


def test_a_reader_that_asks_for_too_much_memory_is_too_large(
    make_pool: MakePool,
) -> None:
    assert failure(make_pool(hostile.eat_memory)).code == "too_large"


def test_a_parser_bug_is_an_unreadable_document_not_an_exception_of_its_own(
    make_pool: MakePool,
) -> None:
    error = failure(make_pool(hostile.blow_up))
    assert error.code == "unreadable"
    assert "KeyError" in error.message


def test_a_hang_after_a_good_document_leaves_the_pool_reading(
    make_pool: MakePool,
) -> None:
    pool = make_pool(hostile.by_text)
    assert failure(pool, b"hang").code == "timeout"
    assert pool.extract(b"after the hang", "text/plain", LIMITS).text == "after the hang"


def test_extract_isolated_gives_extracts_answer_and_its_errors() -> None:
    got = extract_isolated(b"<p>Invoice <b>7</b></p>", "text/html", Limits())
    assert (got.text, got.pages, got.extraction) == ("Invoice 7", 1, "text")
    with pytest.raises(ExtractionFailed) as caught:
        extract_isolated(b"\xff\xfe", "text/plain", Limits())
    assert caught.value.code == "not_utf8"  # the code the API gives it at upload too


def test_extract_all_reads_documents_on_every_child_in_order_each_failure_its_own(
    make_pool: MakePool,
) -> None:
    pool = make_pool(hostile.by_text, 2)
    docs = [(b"first", "text/plain"), (b"crash", "text/plain"), (b"third", "text/plain")]
    got = pool.extract_all(docs, LIMITS)
    assert [g.text if isinstance(g, Extracted) else g.code for g in got] == [
        "first",
        "unreadable",
        "third",
    ]
    pids = pool.extract_all([(b"slow pid", "text/plain")] * 4, LIMITS)
    assert len({p.text for p in pids if isinstance(p, Extracted)}) == 2  # both children read


@pytest.mark.faults  # the pool itself SIGKILLs the child: tests/tiers.py counts that a kill
def test_a_reader_deaf_to_its_timer_is_killed_by_the_parent_and_replaced(
    make_pool: MakePool,
) -> None:
    def children() -> int:
        return sum(1 for p in multiprocessing.active_children() if p.name == "docq-extract")

    pool = make_pool(hostile.hang_deaf)
    before = children()
    for _ in range(2):  # the second in a fresh child: the killed one is gone
        error = failure(pool)
        assert error.code == "timeout"
        assert "(killed)" in error.message
    assert children() == before  # none of them left running
