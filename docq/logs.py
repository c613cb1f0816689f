"""Log lines for a terminal (plain, the default) or for a log pipeline (JSON, DOCQ_LOG_FORMAT).

In JSON every line is one object: time, level, logger, process, message, and on every line
that concerns a job its `job_id` (and `shard`). The job comes from the context the line is
logged in: a worker binds it for the length of a task (workers/app.py), and the API's
access lines carry the job of the path they answered (`/v1/jobs/{id}...`). A line that
names a job itself (`log.info(..., extra={"job_id": ...})`) keeps its own.
"""

from __future__ import annotations

import contextvars
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pythonjsonlogger.json import JsonFormatter

# (job id, shard or None) of the task running in this thread or asyncio task
_JOB: contextvars.ContextVar[tuple[str, int | None] | None] = contextvars.ContextVar(
    "docq_job", default=None
)
_JOB_PATH = re.compile(r"^/v1/jobs/([^/?]+)")

# Celery's own plain format, kept for the default
PLAIN = "[%(asctime)s: %(levelname)s/%(processName)s] %(message)s"
JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(processName)s %(message)s"
JSON_RENAMES = {"asctime": "time", "levelname": "level", "name": "logger", "processName": "process"}


def bind(job_id: str, shard: int | None = None) -> None:
    """Name this job (and shard) on every line logged from here on in this context."""
    _JOB.set((job_id, shard))


def unbind() -> None:
    _JOB.set(None)


@contextmanager
def job(job_id: str, shard: int | None = None) -> Iterator[None]:
    """Name a job on the lines logged inside the block."""
    token = _JOB.set((job_id, shard))
    try:
        yield
    finally:
        _JOB.reset(token)


class JobFilter(logging.Filter):
    """Puts the bound job id (and shard) on each record; lets every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "job_id", None) is None:
            bound = _JOB.get()
            if bound is not None:
                record.job_id, shard = bound
                if shard is not None:
                    record.shard = shard
            elif record.name == "uvicorn.access" and isinstance(record.args, tuple):
                # uvicorn's access line: (client, method, path, http version, status)
                path = record.args[2] if len(record.args) > 2 else ""
                match = _JOB_PATH.match(str(path))
                if match:
                    record.job_id = match.group(1)
        return True


def formatter(log_format: str) -> logging.Formatter:
    """The formatter of a log format (`plain` or `json`)."""
    if log_format == "json":
        return JsonFormatter(JSON_FIELDS, rename_fields=JSON_RENAMES)
    return logging.Formatter(PLAIN)


def install(logger: logging.Logger, log_format: str) -> None:
    """Give `logger`'s handlers the job filter, and the JSON format when asked for it (the
    plain format of an existing handler is left as it is)."""
    for handler in logger.handlers:
        if not any(isinstance(f, JobFilter) for f in handler.filters):
            handler.addFilter(JobFilter())
        if log_format == "json":
            handler.setFormatter(formatter("json"))


def uvicorn_config(log_format: str, log_level: str = "INFO") -> dict[str, Any] | None:
    """uvicorn's logging configuration for a format and level; None keeps uvicorn's own
    (plain)."""
    if log_format != "json":
        return None
    handler = {"class": "logging.StreamHandler", "formatter": "json", "filters": ["job"]}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"job": {"()": JobFilter}},
        "formatters": {
            "json": {"()": JsonFormatter, "fmt": JSON_FIELDS, "rename_fields": JSON_RENAMES}
        },
        "handlers": {"default": {**handler, "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["default"], "level": log_level},
        "loggers": {
            "uvicorn": {"level": log_level},
            "uvicorn.error": {"level": log_level},
            "uvicorn.access": {"level": log_level},
        },
    }
