"""Settings: the models docq serves, and which of them Triton keeps loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, field_validator

from docq.config.paths import REPO_ROOT


class Models(BaseModel):
    """Settings: the model repository, the default model and model control."""

    model_repository: Path = Field(
        REPO_ROOT / "model_repository",
        description="Triton model repository; workers read tokenizer and labels from it.",
    )
    default_model: str | None = Field(
        "doc-type", description="Model used when an upload names none; empty to require one."
    )
    model_control: Literal["explicit", "none", "poll"] = Field(
        "explicit",
        description="Triton's model-control mode. `explicit`: models load on first use and "
        "idle ones are unloaded, so many models share one server's memory, at the price of "
        "a load wait (seconds) for a job whose model is not resident. `none`: every model "
        "of the repository loads at start and stays (no waits, all the memory).",
    )
    model_startup: str = Field(
        "doc-type",
        description="Comma-separated models loaded and warmed when Triton starts (explicit "
        "mode): their first jobs do not wait for a load; each costs start-up time and memory.",
    )
    model_pinned: str = Field(
        "doc-type",
        description="Comma-separated models never unloaded (and loaded at start): memory "
        "held whether they are used or not, in exchange for never waiting for a load.",
    )
    model_max_loaded: int = Field(
        4,
        ge=0,
        description="Most models resident at once; past it the least recently used unpinned "
        "idle model is unloaded. Lower saves memory and costs more reloads. 0: no cap.",
    )
    model_memory_budget_mb: int = Field(
        0,
        ge=0,
        description="Most megabytes of resident models (estimated from each served "
        "version's files); past it the least recently used unpinned idle model is unloaded. "
        "0: no budget.",
    )
    model_idle_s: float = Field(
        30.0,
        ge=0,
        description="A model that answered within this many seconds is never unloaded, even "
        "over the cap or budget: running jobs keep their model, and the cap is exceeded "
        "until it goes idle.",
    )

    @field_validator("default_model")
    @classmethod
    def _empty_is_none(cls, name: str | None) -> str | None:
        return name or None  # DOCQ_DEFAULT_MODEL= (empty): uploads must name their model
