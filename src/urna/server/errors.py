"""One JSON error shape for every 4xx and 5xx: {"error": {"code": ..., "message": ...}}."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from urna.errors import (
    CitationError,
    ModelError,
    ModelGateError,
    NotFoundError,
    QueryError,
    UrnaError,
)

log = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_body(code: str, message: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": message}}


def _response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status)


def code_of(exc: UrnaError) -> tuple[int, str]:
    if isinstance(exc, ModelGateError):
        return 409, "model_gate"
    if isinstance(exc, ModelError):
        return 503, "model_unavailable"
    if isinstance(exc, CitationError):
        return 404 if isinstance(exc, NotFoundError) else 400, "citation"
    if isinstance(exc, QueryError):
        return 400, "bad_query"
    return 400, "bad_request"


def openapi_with_400(app: FastAPI) -> None:
    """Document invalid parameters as what the server sends: 400 with the error body (FastAPI
    would list its default 422, which this server never returns)."""
    original = app.openapi

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = original()
            for operations in doc.get("paths", {}).values():
                for operation in operations.values():
                    responses = operation.get("responses", {})
                    invalid = responses.pop("422", None)
                    if invalid is not None and "400" not in responses:
                        responses["400"] = {
                            "description": "Bad request: one JSON error",
                            "content": {"application/json": {"schema": ERROR_SCHEMA}},
                        }
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]


ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
        }
    },
}


_ONE_ERROR = {
    "description": "One JSON error",
    "content": {"application/json": {"schema": ERROR_SCHEMA}},
}
# Every status a search route can answer besides 200: documented so clients (and
# schemathesis) know the whole contract.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: _ONE_ERROR for code in (400, 401, 404, 409, 413, 429, 503)
}
# What every route but health may answer besides 200: a missing token, the rate limit.
GUARDED_RESPONSES: dict[int | str, dict[str, Any]] = {code: _ONE_ERROR for code in (401, 429)}


def install(app: FastAPI, public: Callable[[str], str] = lambda m: m) -> None:
    """The error handlers; ``public`` rewrites a message's paths for clients."""
    openapi_with_400(app)

    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return _response(exc.status, exc.code, exc.message)

    @app.exception_handler(UrnaError)
    async def urna_error(_: Request, exc: UrnaError) -> JSONResponse:
        status, code = code_of(exc)
        return _response(status, code, public(str(exc)))

    @app.exception_handler(RequestValidationError)
    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("query", "body"))
        return _response(400, "bad_request", f"{where or 'request'}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        response = _response(exc.status_code, code, str(exc.detail))
        for name, value in (exc.headers or {}).items():  # 405 carries Allow
            response.headers[name] = value
        documented = _allowed(request) if exc.status_code == 405 else []
        if documented:  # every method of the path, not only the first route's
            response.headers["Allow"] = ", ".join(documented)
        return response

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return _response(500, "internal", f"{type(exc).__name__}: {exc}")


def _allowed(request: Request) -> list[str]:
    """The methods the API documents for the request's path (GET and POST /v1/search), read
    from the OpenAPI schema (FastAPI keeps it once built); none for an undocumented path."""
    import re

    paths = request.app.openapi().get("paths", {})
    wanted = request.url.path
    for template, operations in paths.items():
        pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
        if re.fullmatch(pattern, wanted):
            return sorted(m.upper() for m in operations if m != "parameters")
    return []
