"""`/v1/models`: the models Triton serves, with their labels and limits."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import Deps
from docq.errors import DocqError
from docq.schemas import ModelPublic, ModelsPublic

router = APIRouter(prefix="/v1/models", tags=["models"])


@router.get("", response_model=ModelsPublic)
def list_models(deps: Deps) -> ModelsPublic:
    """Every model in Triton's repository, its state, and (when loaded) labels and limits."""
    data = []
    for entry in deps.catalog.index():
        model = ModelPublic(
            name=entry["name"],
            version=entry.get("version") or None,
            state=entry.get("state", "UNKNOWN").lower(),
            reason=entry.get("reason") or None,
        )
        if entry.get("state") == "READY":
            try:
                spec = deps.catalog.spec(entry["name"])
            except DocqError as exc:
                model.reason = exc.message
            else:
                model.labels = list(spec.labels)
                model.max_seq_len = spec.max_seq_len
                model.max_batch_size = spec.max_batch_size
                model.runtime = spec.runtime or None
        data.append(model)
    return ModelsPublic(data=data, count=len(data))
