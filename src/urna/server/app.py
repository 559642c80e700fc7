"""The FastAPI application: routes, the token check, the page."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from importlib import resources

from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse

from urna import __version__
from urna.server import compat, errors, v1
from urna.server.databases import Databases
from urna.server.errors import error_body

OPEN_PATHS = ("/api/health",)


def create_app(dbs: Databases, *, token: str | None = None) -> FastAPI:
    app = FastAPI(
        title="urna",
        version=__version__,
        description="Search .urna files: KuraDB-compatible routes and the /v1 API.",
    )
    errors.install(app)

    @app.middleware("http")
    async def check_token(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if token and request.url.path not in OPEN_PATHS:
            given = request.headers.get("authorization", "")
            expected = f"Bearer {token}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                return JSONResponse(
                    error_body("unauthorized", "a valid bearer token is required"),
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return await call_next(request)

    app.include_router(compat.router(dbs))
    app.include_router(v1.router(dbs))

    page = resources.files("urna.server").joinpath("page.html").read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> str:
        return page

    return app
