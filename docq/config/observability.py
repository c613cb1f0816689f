"""Settings: what the processes log and where the workers serve their metrics."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field


def _upper(level: Any) -> Any:
    return level.upper() if isinstance(level, str) else level


# The levels DOCQ_LOG_LEVEL takes, in any case (the API's uvicorn and the workers' --loglevel
# take them too)
LogLevel = Annotated[Literal["DEBUG", "INFO", "WARNING", "ERROR"], BeforeValidator(_upper)]


class Observability(BaseModel):
    """Settings: logs and worker metrics."""

    log_format: Literal["plain", "json"] = Field(
        "plain",
        description="`plain` lines for a terminal, or `json`: one object per line with the "
        "job id (and shard) on every line about a job, for a log pipeline to index; "
        "harder to read by eye.",
    )
    log_level: LogLevel = Field(
        "INFO",
        description="DEBUG, INFO, WARNING or ERROR: the least a line must be to be logged, by "
        "the API and the workers. DEBUG adds every library's detail, at many more lines.",
    )
    worker_metrics_port: int = Field(
        0,
        description="Port of a worker process's Prometheus metrics (model load times, "
        "batches, padding, shard times). Each worker process needs its own; 0 serves none.",
    )
    worker_metrics_host: str = Field("127.0.0.1", description="Worker metrics bind address.")
