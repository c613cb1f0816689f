"""The API process's start-up."""

from __future__ import annotations

import gc

from fastapi.testclient import TestClient


def test_start_up_objects_are_kept_out_of_the_garbage_collector(api: TestClient) -> None:
    # After the lifespan ran, a full collection no longer walks the imported modules, the
    # app and its clients (tens of thousands of objects) in the middle of an upload.
    assert gc.get_freeze_count() > 10_000
