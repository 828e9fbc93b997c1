"""One exception class per failure the API documents (docs/api.md)."""

from __future__ import annotations

import httpx
from pydantic import ValidationError

from .types import Problem

__all__ = [
    "DispatchError",
    "APIError",
    "APIStatusError",
    "APIConnectionError",
    "APIConnectionTimeoutError",
    "APIResponseValidationError",
    "BadRequestError",
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "ConflictError",
    "UnprocessableEntityError",
    "RateLimitError",
    "InternalServerError",
]


class DispatchError(Exception):
    """Base of every error this library raises."""


class APIError(DispatchError):
    message: str
    request: httpx.Request
    body: object
    """The decoded response body (the problem+json as a dict), or None when there was no response."""

    def __init__(self, message: str, request: httpx.Request, *, body: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.request = request
        self.body = body

    def __str__(self) -> str:
        return self.message


class APIConnectionError(APIError):
    """No response: the connection failed or dropped (after the configured retries)."""

    def __init__(self, request: httpx.Request, message: str = "Connection error.") -> None:
        super().__init__(message, request, body=None)


class APIConnectionTimeoutError(APIConnectionError):
    """The request timed out (after the configured retries)."""

    def __init__(self, request: httpx.Request, message: str = "Request timed out.") -> None:
        super().__init__(request, message)


class APIResponseValidationError(APIError):
    """A 2xx response whose body does not have the documented shape."""

    response: httpx.Response
    status_code: int

    def __init__(self, response: httpx.Response, body: object, message: str | None = None) -> None:
        super().__init__(
            message or "The response body does not have the documented shape.", response.request, body=body
        )
        self.response = response
        self.status_code = response.status_code


class APIStatusError(APIError):
    """A non-2xx response. Subclasses name the status; others (405, 413, 415, ...) raise this class."""

    response: httpx.Response
    status_code: int
    headers: httpx.Headers
    problem: Problem | None
    """The body as a Problem when it is one (always, from a Dispatch server)."""

    def __init__(self, message: str, *, response: httpx.Response, body: object) -> None:
        super().__init__(message, response.request, body=body)
        self.response = response
        self.status_code = response.status_code
        self.headers = response.headers
        self.problem = _as_problem(body)

    @property
    def error_code(self) -> str | None:
        """The stable ``error_code`` of the problem, e.g. ``resource_not_found``."""
        return self.problem.error_code if self.problem else None

    @property
    def retryable(self) -> bool | None:
        return self.problem.retryable if self.problem else None

    @property
    def detail(self) -> str | None:
        return self.problem.detail if self.problem else None

    @property
    def trace_id(self) -> str | None:
        return self.problem.trace_id if self.problem else None


class BadRequestError(APIStatusError):
    """400 ``invalid_request``."""


class AuthenticationError(APIStatusError):
    """401 ``authentication_required``."""


class PermissionDeniedError(APIStatusError):
    """403 ``not_authorized``."""


class NotFoundError(APIStatusError):
    """404 ``resource_not_found``."""


class ConflictError(APIStatusError):
    """409 ``conflict`` (retried automatically)."""


class UnprocessableEntityError(APIStatusError):
    """422 ``idempotency_key_reused``."""


class RateLimitError(APIStatusError):
    """429 ``rate_limited`` (retried automatically, honouring Retry-After)."""


class InternalServerError(APIStatusError):
    """Any 5xx (retried automatically)."""


_BY_STATUS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def _as_problem(body: object) -> Problem | None:
    if not isinstance(body, dict):
        return None
    try:
        return Problem.model_validate(body)
    except ValidationError:
        return None


def make_status_error(response: httpx.Response) -> APIStatusError:
    """The exception for a non-2xx response whose body has been read."""
    body: object
    try:
        body = response.json()
    except ValueError:
        body = response.text or None
    problem = _as_problem(body)
    if problem is not None:
        message = f"{response.status_code} {problem.error_code}: {problem.error}"
    else:
        text = body if isinstance(body, str) else ""
        message = f"{response.status_code} {response.reason_phrase}" + (f": {text[:500]}" if text else "")
    status = response.status_code
    cls = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else APIStatusError)
    return cls(message, response=response, body=body)
