"""The one place where docq errors become HTTP answers."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from docq import errors

log = logging.getLogger(__name__)

# Most specific first: the first matching class decides the status.
STATUS: list[tuple[type[errors.DocqError], int]] = [
    (errors.MalformedBody, 400),
    (errors.PayloadTooLarge, 413),
    (errors.UnsupportedMediaType, 415),
    (errors.ValidationError, 422),
    (errors.UnknownModel, 422),
    (errors.Unauthorized, 401),
    (errors.NotFound, 404),
    (errors.TenantLimitExceeded, 429),
    (errors.Conflict, 409),
    (errors.ModelError, 502),
    (errors.RetryableError, 503),
    (errors.DocqError, 500),
]


def status_of(exc: errors.DocqError) -> int:
    return next(code for cls, code in STATUS if isinstance(exc, cls))


def _headers(exc: errors.DocqError, status: int) -> dict[str, str] | None:
    if status == 401:
        return {"WWW-Authenticate": 'Bearer realm="docq"'}
    if isinstance(exc, errors.TenantLimitExceeded):
        return {"Retry-After": str(exc.retry_after_s)}
    if status == 503:
        return {"Retry-After": "5"}
    return None


def body(code: str, message: str, detail: object = None) -> dict[str, object]:
    return {"error": {"code": code, "message": message, "detail": detail}}


def install(app: FastAPI) -> None:
    """Register the handlers that give every error the `{"error": {...}}` shape."""

    @app.exception_handler(errors.DocqError)
    async def _docq(_: Request, exc: errors.DocqError) -> JSONResponse:
        status = status_of(exc)
        if status >= 500:
            log.warning("%s: %s (%s)", exc.code, exc.message, exc.detail)
        headers = _headers(exc, status)
        return JSONResponse(body(exc.code, exc.message, exc.detail), status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _request(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [{"loc": list(e["loc"]), "message": e["msg"]} for e in exc.errors()]
        first = problems[0] if problems else {"loc": [], "message": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        return JSONResponse(
            body("invalid_request", f"{where}: {first['message']}", {"errors": problems}), 422
        )

    @app.exception_handler(HTTPException)
    async def _http(_: Request, exc: HTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(body(code, str(exc.detail)), exc.status_code, headers=exc.headers)
