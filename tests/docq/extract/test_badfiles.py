"""The bad-files catalogue (badfiles.py): every kind is that document's precise error, in
this process and in the isolated child, and the child survives them all."""

from __future__ import annotations

import pytest

from docq.errors import ExtractionFailed
from docq.extract import extract, sniff
from docq.extract.isolation import ExtractorPool
from tests.docq.extract import hostile
from tests.docq.extract.badfiles import CATALOGUE, UNSNIFFABLE, BadFile, Unsniffable


def test_the_catalogue_holds_at_least_thirty_kinds_with_distinct_names() -> None:
    names = [bad.name for bad in CATALOGUE] + [bad.name for bad in UNSNIFFABLE]
    assert len(names) == len(set(names)) >= 30


@pytest.mark.parametrize("bad", CATALOGUE, ids=lambda bad: bad.name)
def test_each_bad_file_is_its_own_precise_error(bad: BadFile) -> None:
    with pytest.raises(ExtractionFailed) as caught:
        extract(bad.make(), bad.content_type, bad.limits)
    assert caught.value.code == bad.code, caught.value.message
    assert caught.value.message  # says what, in words


@pytest.mark.parametrize("bad", UNSNIFFABLE, ids=lambda bad: bad.name)
def test_the_api_can_refuse_these_at_upload(bad: Unsniffable) -> None:
    assert sniff(bad.make()) is None


def test_the_isolated_child_answers_the_same_and_outlives_every_bad_file() -> None:
    pool = ExtractorPool(1, target=hostile.read_and_tell_pid)
    try:
        first = pool.extract(b"pid", "text/plain", CATALOGUE[0].limits).text
        for bad in CATALOGUE:
            with pytest.raises(ExtractionFailed) as caught:
                pool.extract(bad.make(), bad.content_type, bad.limits)
            assert caught.value.code == bad.code, bad.name
        assert pool.extract(b"pid", "text/plain", CATALOGUE[0].limits).text == first
    finally:
        pool.close()
