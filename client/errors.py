"""What the docq client raises: one small tree, so a caller can catch as broadly as it needs.

ClientError                 anything the client raises on purpose
 ├── Unreachable            no HTTP answer: refused connection, DNS failure, timeout
 ├── WaitTimeout            a job was not final when the caller stopped waiting
 ├── InvalidSignature       a webhook delivery whose signature does not verify
 └── APIError               the API answered with an error body
      ├── Unauthorized      401: no API key, or one the server does not know
      ├── NotFound          404: an unknown (or another tenant's, or expired) job
      ├── Refused           any other 4xx: an invalid or too large upload, an unknown model
      └── ServerError       5xx: Redis, the broker or Triton unavailable, or a bug
           └── Unavailable  503: the server is briefly unable (Redis, the broker), try later
"""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """Base of every error the client raises on purpose."""


class Unreachable(ClientError):
    """The server gave no HTTP answer (connection refused, name not resolved, timed out)."""


class WaitTimeout(ClientError, TimeoutError):
    """A job was still running when the caller's wait ran out."""


class InvalidSignature(ClientError):
    """A webhook delivery's signature or timestamp does not verify."""


class APIError(ClientError):
    """The API answered with an error; `code` and `message` are the server's own."""

    def __init__(self, status: int, code: str, message: str, detail: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.detail = detail

    # The server's Retry-After in seconds, when it gave one (429 and 503 answers)
    retry_after: float | None = None


class Unauthorized(APIError):
    """401: the request carried no API key, or one the server refuses."""


class NotFound(APIError):
    """404: the job does not exist for this key (unknown, another tenant's, or expired)."""


class Refused(APIError):
    """Any other 4xx: the server refused the request as it stands; repeating it will not help."""


class RateLimited(Refused):
    """429: over one of the tenant's limits, or the server is overloaded; the same request
    can succeed after `retry_after` seconds (the server's Retry-After, when it gave one)."""


class ServerError(APIError):
    """5xx: the server or a service behind it failed; the same request may work later."""


class Unavailable(ServerError):
    """503: a service behind the API is away (Redis, the broker) or the store is full; the
    same request can succeed after `retry_after` seconds (the server's Retry-After)."""


def api_error(status: int, body: Any, text: str, retry_after: str | None = None) -> APIError:
    """The APIError for an error answer, from its `{"error": {code, message, detail}}` body."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {"code": "http_error", "message": text.strip()[:200] or f"HTTP {status}"}
    code, message = str(error.get("code", "http_error")), str(error.get("message", ""))
    cls: type[APIError]
    if status == 401:
        cls = Unauthorized
    elif status == 404:
        cls = NotFound
    elif status == 429:
        cls = RateLimited
    elif status == 503:
        cls = Unavailable
    elif status >= 500:
        cls = ServerError
    else:
        cls = Refused
    exc = cls(status, code, message, error.get("detail"))
    if retry_after and retry_after.isdigit():
        exc.retry_after = float(retry_after)
    return exc
