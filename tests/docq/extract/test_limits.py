"""docq/extract/base.py's Limits: read from the one Settings object (DOCQ_EXTRACT_*)."""

from __future__ import annotations

import dataclasses

import pytest

from docq.config import Settings
from docq.extract import Limits


def test_limits_come_from_the_docq_extract_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCQ_EXTRACT_MAX_PAGES", "7")
    monkeypatch.setenv("DOCQ_EXTRACT_TIMEOUT_S", "2.5")
    monkeypatch.setenv("DOCQ_EXTRACT_OCR_LANGUAGE", "eng+deu")
    limits = Limits.from_settings(Settings())
    assert (limits.max_pages, limits.timeout_s, limits.ocr_language) == (7, 2.5, "eng+deu")


def test_every_limit_has_its_setting_and_the_same_default() -> None:
    settings = Settings()
    for field in dataclasses.fields(Limits):
        assert getattr(settings, f"extract_{field.name}") == field.default, field.name
    assert Limits.from_settings(settings) == Limits()


def test_a_limit_that_makes_no_sense_is_refused_at_start_up() -> None:
    with pytest.raises(ValueError):
        Settings(extract_max_pages=0)
