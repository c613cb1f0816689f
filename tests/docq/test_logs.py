"""docq/logs.py: JSON lines that name their job; the plain format left as it was."""

from __future__ import annotations

import io
import json
import logging
import logging.config
from collections.abc import Iterator

import pytest

from docq import logs


@pytest.fixture
def logger() -> Iterator[tuple[logging.Logger, io.StringIO]]:
    out = io.StringIO()
    log = logging.getLogger("docq.test_logs")
    log.propagate = False
    log.setLevel(logging.INFO)
    log.addHandler(logging.StreamHandler(out))
    yield log, out
    log.handlers.clear()
    logs.unbind()


def lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_json_lines_name_the_bound_job_and_shard(
    logger: tuple[logging.Logger, io.StringIO],
) -> None:
    log, out = logger
    logs.install(log, "json")
    log.info("before")
    logs.bind("j1", 3)
    log.info("inside %s", "a task")
    logs.unbind()
    with logs.job("j2"):
        log.warning("webhook")
    first, inside, webhook = lines(out)
    assert "job_id" not in first
    assert inside["job_id"] == "j1" and inside["shard"] == 3
    assert inside["message"] == "inside a task" and inside["level"] == "INFO"
    assert inside["logger"] == "docq.test_logs" and "time" in inside
    assert webhook["job_id"] == "j2" and "shard" not in webhook


def test_a_line_that_names_its_job_keeps_it(logger: tuple[logging.Logger, io.StringIO]) -> None:
    log, out = logger
    logs.install(log, "json")
    logs.bind("bound")
    log.info("x", extra={"job_id": "own"})
    assert lines(out)[0]["job_id"] == "own"


def test_plain_stays_plain(logger: tuple[logging.Logger, io.StringIO]) -> None:
    log, out = logger
    logs.install(log, "plain")
    logs.bind("j1", 0)
    log.info("hello")
    assert out.getvalue() == "hello\n"  # the handler's own format, untouched


def test_the_api_access_line_names_the_job_of_its_path() -> None:
    config = logs.uvicorn_config("json")
    assert config is not None and logs.uvicorn_config("plain") is None
    out = io.StringIO()
    config["handlers"]["default"]["stream"] = out
    logging.config.dictConfig(config)
    try:
        access = logging.getLogger("uvicorn.access")
        args = ("127.0.0.1:5000", "GET", "/v1/jobs/abc123/results?limit=5", "1.1", 200)
        access.info('%s - "%s %s HTTP/%s" %d', *args)
        access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", "/healthz", "1.1", 200)
    finally:
        logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
        logging.getLogger().handlers.clear()
    job_line, health_line = lines(out)
    assert job_line["job_id"] == "abc123"
    assert "job_id" not in health_line


def test_the_log_level_is_validated_and_reaches_uvicorns_loggers() -> None:
    from pydantic import ValidationError

    from docq.config import Settings

    assert Settings().log_level == "INFO"
    assert Settings(log_level="debug").log_level == "DEBUG"
    with pytest.raises(ValidationError, match="log_level"):
        Settings(log_level="verbose")
    config = logs.uvicorn_config("json", "DEBUG")
    assert config is not None and config["root"]["level"] == "DEBUG"
    assert {c["level"] for c in config["loggers"].values()} == {"DEBUG"}
