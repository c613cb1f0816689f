"""docq.config: the settings refuse a bad environment whole, field by field, and their schema
carries every limit."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from docq.config import Settings, SettingsError, get_settings

SECRET = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # 24 bytes in base64


def refused_fields(exc: ValidationError) -> set[str]:
    return {".".join(map(str, e["loc"])) for e in exc.errors()}


def test_every_wrong_variable_is_named_in_one_error(monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = {
        "DOCQ_SHARD_SIZE": "0",
        "DOCQ_TRITON_HEALTH_INTERVAL_S": "0",
        "DOCQ_LOG_FORMAT": "xml",
        "DOCQ_LOG_LEVEL": "verbose",
        "DOCQ_MODEL_CONTROL": "lazy",
        "DOCQ_REDIS_MODE": "cluster",
        "DOCQ_WEBHOOK_MAX_ATTEMPTS": "0",
        "DOCQ_EXTRACT_OCR_DPI": "9000",
        "DOCQ_MAX_DOCUMENTS_PER_JOB": "500",
        "DOCQ_TENANT_MAX_QUEUED_DOCUMENTS": "100",  # fewer than one job may hold
        "DOCQ_WEBHOOK_URL": "https://hooks.example.com/docq",  # and no secret
    }
    for name, value in wrong.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError) as caught:
        Settings()
    # the two that are right alone are named where the other one's limit is broken:
    # max_documents_per_job at tenant_max_queued_documents, webhook_url at its missing secret
    named = {n.removeprefix("DOCQ_").lower() for n in wrong} | {"webhook_secret"}
    assert refused_fields(caught.value) == named - {"max_documents_per_job", "webhook_url"}
    assert "must be at least max_documents_per_job (500)" in str(caught.value)
    assert "webhook_url needs webhook_secret" in str(caught.value)

    # what a process sees at start-up: the variables themselves, one line each
    get_settings.cache_clear()
    try:
        with pytest.raises(SettingsError) as started:
            get_settings()
    finally:
        get_settings.cache_clear()
    lines = str(started.value).splitlines()
    assert lines[0] == "10 wrong setting(s):"
    assert {line.split(":")[0] for line in lines[1:]} == {f"DOCQ_{n.upper()}" for n in named} - {
        "DOCQ_MAX_DOCUMENTS_PER_JOB",
        "DOCQ_WEBHOOK_URL",
    }


def test_errors_never_print_the_value_given() -> None:
    """A refused setting may be a secret (a password in redis_url, a webhook secret)."""
    with pytest.raises(ValidationError) as caught:
        Settings(webhook_url="https://hooks.example.com/docq", webhook_secret="whsec_tooshort")
    assert refused_fields(caught.value) == {"webhook_secret"}
    assert "whsec_tooshort" not in str(caught.value)


def test_the_webhook_checks_and_the_empty_defaults() -> None:
    s = Settings(webhook_url="https://hooks.example.com/docq", webhook_secret=SECRET)
    assert s.webhook_url == "https://hooks.example.com/docq"
    assert Settings(webhook_url="", default_model="").webhook_url is None
    assert Settings(default_model="").default_model is None
    assert Settings(webhook_secret="not one").webhook_secret == "not one"  # unused: unchecked
    with pytest.raises(ValidationError, match="scheme must be http or https") as caught:
        Settings(webhook_url="ftp://hooks.example.com/", webhook_secret=SECRET)
    assert refused_fields(caught.value) == {"webhook_url"}


def test_the_cross_check_reads_a_default_too() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(max_documents_per_job=2_000_000)  # past the default tenant_max_queued_...
    assert refused_fields(caught.value) == {"tenant_max_queued_documents"}
    assert Settings(max_documents_per_job=2_000_000, tenant_max_queued_documents=2_000_000)


def test_the_schema_carries_the_limits() -> None:
    props = Settings.model_json_schema()["properties"]
    assert props["shard_size"]["minimum"] == 1
    assert props["triton_health_interval_s"]["exclusiveMinimum"] == 0
    assert props["triton_hold_s"]["minimum"] == 0
    assert props["extract_ocr_dpi"]["minimum"] == 72
    assert props["extract_ocr_dpi"]["maximum"] == 600
    assert props["model_control"]["enum"] == ["explicit", "none", "poll"]
    assert props["redis_mode"]["enum"] == ["single", "sentinel"]
    assert props["log_level"]["enum"] == ["DEBUG", "INFO", "WARNING", "ERROR"]
    assert props["log_format"]["enum"] == ["plain", "json"]
    assert props["webhook_timeout_s"]["exclusiveMinimum"] == 0
    # every setting says what it trades, in the schema too
    assert all(p.get("description") for p in props.values())


def test_the_defaults_pass_their_own_limits() -> None:
    s = Settings()
    assert (s.shard_size, s.log_level, s.model_control, s.redis_mode) == (
        64,
        "INFO",
        "explicit",
        "single",
    )
    assert Settings(log_level="warning").log_level == "WARNING"
