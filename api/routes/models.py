"""`/v1/models`: the models of Triton's repository, their state, version, labels and limits."""

from __future__ import annotations

from fastapi import APIRouter

from api.deps import Deps
from docq.errors import DocqError
from docq.model_control import ModelState
from docq.schemas import ModelPublic, ModelsPublic

router = APIRouter(prefix="/v1/models", tags=["models"])


@router.get("", response_model=ModelsPublic)
def list_models(deps: Deps) -> ModelsPublic:
    """Every model in the repository: state and version now, and labels and limits when ready.

    In explicit model control a model that is not loaded is still listed (available or
    unloaded): a job for it loads it.
    """
    pinned = set(deps.settings.pinned_models)
    data = []
    for status in sorted(deps.catalog.statuses().values(), key=lambda s: s.name):
        model = ModelPublic(
            name=status.name,
            version=status.version,
            state=status.state.value,
            pinned=status.name in pinned,
            reason=status.reason,
        )
        if status.state is ModelState.READY:
            try:
                spec = deps.catalog.spec(status.name)
            except DocqError as exc:
                model.reason = exc.message
            else:
                model.labels = list(spec.labels)
                model.max_seq_len = spec.max_seq_len
                model.max_batch_size = spec.max_batch_size
                model.runtime = spec.runtime or None
        data.append(model)
    return ModelsPublic(data=data, count=len(data))
