"""The API process's start-up."""

from __future__ import annotations

import gc
import re

from fastapi.testclient import TestClient


def test_start_up_objects_are_kept_out_of_the_garbage_collector(api: TestClient) -> None:
    # After the lifespan ran, a full collection no longer walks the imported modules, the
    # app and its clients (tens of thousands of objects) in the middle of an upload.
    assert gc.get_freeze_count() > 10_000


def test_docs_page_loads_swagger_ui_from_the_api_itself(api: TestClient) -> None:
    page = api.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert "/docs/assets/swagger-ui-bundle.js" in sources
    assert [s for s in sources if "://" in s] == []  # no CDN, nor any other host
    for source in sources:
        asset = api.get(source)
        assert asset.status_code == 200 and len(asset.content) > 0, source
    assert "/docs" not in api.get("/openapi.json").json()["paths"]


def test_docq_loggers_log_at_the_level_asked_for_in_either_format() -> None:
    from api.main import log_config

    for log_format in ("plain", "json"):
        config = log_config(log_format, "DEBUG")
        # api.* and docq.* log through the root: on uvicorn's handler, not Python's last resort
        assert config["root"] == {"handlers": ["default"], "level": "DEBUG"}
        assert "default" in config["handlers"]
