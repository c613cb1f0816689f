"""The API's documentation page, `/docs`: Swagger UI served by the API itself.

FastAPI's default page loads Swagger UI's script and style from a CDN, so a deployment
without internet access (or a browser that blocks third-party scripts) gets a blank page.
Here the files come from the swagger-ui-bundle-v2 package, mounted under /docs/assets.
"""

from __future__ import annotations

import swagger_ui_bundle
from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs/assets"


def install(app: FastAPI) -> None:
    """Serve /docs and its assets (create the app with `docs_url=None, redoc_url=None`)."""
    app.mount(ASSETS, StaticFiles(directory=swagger_ui_bundle.swagger_ui_path), name="docs")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
        )
