"""The FastAPI application: routes, the token check, the page."""

from __future__ import annotations

import hmac
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from importlib import resources

from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.routing import BaseRoute

from urna.errors import UrnaError
from urna.server import compat, errors, v1
from urna.server.databases import Databases
from urna.server.errors import error_body
from urna.server.log import ServerLog
from urna.version import __version__

OPEN_PATHS = ("/api/health",)


MAX_BODY = 256 * 1024  # a /v1 request body (a search with its where-filter)


class RateLimit:
    """A token bucket per client address: ``rate`` requests a second, bursts of ``rate``.

    The address is the socket's peer (the server does not trust X-Forwarded-For), and the
    table holds at most MAX_CLIENTS buckets, the least recently seen forgotten first.
    """

    MAX_CLIENTS = 10_000

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self.lock = threading.Lock()

    def allow(self, client: str) -> bool:
        now = time.monotonic()
        with self.lock:
            tokens, last = self.buckets.pop(client, (self.rate, now))
            tokens = min(self.rate, tokens + (now - last) * self.rate)
            allowed = tokens >= 1
            self.buckets[client] = (tokens - 1 if allowed else tokens, now)
            while len(self.buckets) > self.MAX_CLIENTS:
                self.buckets.popitem(last=False)
            return allowed


def create_app(
    dbs: Databases,
    *,
    token: str | None = None,
    max_rps: float = 0,
    host: str = "127.0.0.1",
    mcp: bool = True,
    log: ServerLog | None = None,
) -> FastAPI:
    """The app. ``host`` is the address it listens on: on loopback, /mcp refuses requests
    whose Host or Origin is not a loopback name (DNS rebinding)."""
    mcp_routes, lifespan = _mcp(dbs, host) if mcp else ([], None)
    app = FastAPI(
        title="urna",
        version=__version__,
        description="Search .urna files: KuraDB-compatible routes, the /v1 API, MCP at /mcp.",
        lifespan=lifespan,
    )
    errors.install(app, dbs.public)

    limiter = RateLimit(max_rps) if max_rps > 0 else None

    @app.middleware("http")
    async def limit_rate(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        client = request.client.host if request.client else "-"
        if limiter and request.url.path not in OPEN_PATHS and not limiter.allow(client):
            return JSONResponse(
                error_body("rate_limited", f"more than {max_rps:g} requests a second"),
                status_code=429,
                headers={"Retry-After": "1"},
            )
        return await call_next(request)

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

    @app.middleware("http")
    async def limit_body(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        size = request.headers.get("content-length", "0")
        if request.url.path.startswith("/v1/") and (not size.isdigit() or int(size) > MAX_BODY):
            return JSONResponse(
                error_body("body_too_large", f"a request body is at most {MAX_BODY} bytes"),
                status_code=413,
            )
        return await call_next(request)

    if log is not None:  # added last, so it is outermost: refused requests are logged too

        @app.middleware("http")
        async def access_log(
            request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            t0 = time.perf_counter()
            response = await call_next(request)
            ms = 1000 * (time.perf_counter() - t0)
            log.access(request.method, request.url.path, response.status_code, ms)
            return response

    app.include_router(compat.router(dbs))
    app.include_router(v1.router(dbs))
    app.router.routes.extend(mcp_routes)

    page = resources.files("urna.server").joinpath("page.html").read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> str:
        return page

    return app


Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]


def _mcp(dbs: Databases, host: str) -> tuple[list[BaseRoute], Lifespan | None]:
    """The MCP server's route (stateless streamable HTTP) and the lifespan that runs its
    session manager; none when the ``mcp`` package is not installed."""
    try:
        from urna.server.mcp import create_mcp

        server = create_mcp(dbs)
    except UrnaError:
        return [], None
    starlette = server.streamable_http_app(stateless_http=True, json_response=True, host=host)
    manager = server.session_manager

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with manager.run():
            yield

    return list(starlette.routes), lifespan
