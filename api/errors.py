"""The one place where docq errors become HTTP answers."""

from __future__ import annotations

import json
import logging
import uuid
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import Match, Route

from docq import errors
from docq.schemas import ErrorBody

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
    (errors.ForbiddenObject, 403),
    (errors.TenantLimitExceeded, 429),
    (errors.Overloaded, 429),
    (errors.Conflict, 409),
    (errors.ModelError, 502),
    (errors.RetryableError, 503),
    (errors.DocqError, 500),
]


def responses(*codes: int) -> dict[int | str, dict[str, object]]:
    """OpenAPI `responses` declaring these error statuses, each with the error body."""
    return {code: {"model": ErrorBody, "description": HTTPStatus(code).phrase} for code in codes}


def status_of(exc: errors.DocqError) -> int:
    return next(code for cls, code in STATUS if isinstance(exc, cls))


def _headers(exc: errors.DocqError, status: int) -> dict[str, str] | None:
    if status == 401:
        return {"WWW-Authenticate": 'Bearer realm="docq"'}
    if isinstance(
        exc,
        errors.TenantLimitExceeded | errors.Overloaded | errors.StoreFull | errors.NotReplicated,
    ):
        return {"Retry-After": str(exc.retry_after_s)}
    if status == 503:
        return {"Retry-After": "5"}
    return None


def body(code: str, message: str, detail: object = None) -> dict[str, object]:
    return {"error": {"code": code, "message": message, "detail": detail}}


class ErrorResponse(JSONResponse):
    """An error as JSON that can always be encoded: text from the request (an id with a
    lone surrogate, say) is escaped, never a reason for the error answer itself to fail."""

    def render(self, content: object) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at the request's path (its 405's `Allow`)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, Route) and route.matches(request.scope)[0] is Match.PARTIAL:
            methods |= route.methods or set()
    return sorted(methods)


def install(app: FastAPI) -> None:
    """Register the handlers that give every error the `{"error": {...}}` shape."""

    @app.exception_handler(errors.DocqError)
    async def _docq(_: Request, exc: errors.DocqError) -> JSONResponse:
        status = status_of(exc)
        if status >= 500:
            log.warning("%s: %s (%s)", exc.code, exc.message, exc.detail)
        headers = _headers(exc, status)
        return ErrorResponse(body(exc.code, exc.message, exc.detail), status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _request(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [{"loc": list(e["loc"]), "message": e["msg"]} for e in exc.errors()]
        first = problems[0] if problems else {"loc": [], "message": "invalid request"}
        where = ".".join(str(p) for p in first["loc"])
        return ErrorResponse(
            body("invalid_request", f"{where}: {first['message']}", {"errors": problems}), 422
        )

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        headers = exc.headers
        if exc.status_code == 405:  # Starlette's names only the first route of the path
            headers = {**(headers or {}), "Allow": ", ".join(allowed_methods(request))}
        return ErrorResponse(body(code, str(exc.detail)), exc.status_code, headers=headers)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        """Whatever escapes (a bug): a JSON 500 naming a request id, logged with its
        traceback under the same id, so a report can be matched to the log."""
        request_id = uuid.uuid4().hex
        log.error(
            "unhandled %s on %s %s (request %s)",
            type(exc).__name__,
            request.method,
            request.url.path,
            request_id,
            exc_info=exc,
        )
        return ErrorResponse(
            body(
                "internal_error",
                f"internal error; quote request id {request_id} when reporting it",
                {"request_id": request_id},
            ),
            500,
            headers={"X-Request-ID": request_id},
        )
