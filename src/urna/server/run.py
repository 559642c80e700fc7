"""Start the server: check the binding rules, load the databases, run uvicorn."""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from urna.errors import UrnaError
from urna.format.catalog import is_collection

if TYPE_CHECKING:
    from urna.server.log import ServerLog

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    paths: list[Path],
    *,
    host: str,
    port: int,
    token: str | None,
    watches: list[str] | None = None,
    data: Path | None = None,
    model: str | None = None,
    interval: float = 0.25,
    max_file_mb: int = 64,
    max_rps: float = 200.0,
    ray: str | None = None,
    places: list[str] | None = None,
    log: ServerLog | None = None,
) -> None:
    token = token or os.environ.get("URNA_TOKEN") or None
    if not is_loopback(host) and not token:
        raise UrnaError(
            f"refusing to listen on {host} without a token: pass --token or set URNA_TOKEN "
            "(only loopback addresses may serve without one)"
        )
    if ray is not None:
        _serve_ray(
            paths, watches, ray, places or [], host=host, port=port, token=token, rps=max_rps
        )
        return
    try:
        import uvicorn

        from urna.server.app import create_app
        from urna.server.databases import Databases, load
    except ImportError:
        raise UrnaError("the server needs its extra: pip install 'urna[serve]'") from None
    from urna.server.log import ServerLog
    from urna.server.watch import Watcher, parse_watch

    parsed = [parse_watch(w) for w in watches or []]
    if not paths and not parsed:
        raise UrnaError("nothing to serve: give .urna files or folders, or --watch NAME=DIR")
    dbs = load(paths) if paths else Databases()
    for n, w in enumerate(parsed):
        served = dbs.get(w.name)
        if served is None:
            continue
        if not is_collection(served.path):
            raise UrnaError(
                f"--watch {w.name} names a served .urna file; a watched folder keeps a "
                "collection (build one with urna build DIR -o FOLDER --shards N)"
            )
        parsed[n] = replace(w, collection=served.path)  # the collection you built, kept
    log = log or ServerLog()
    sock = listen(host, port)  # bound before the first line, so the lines tell the truth
    watcher = None
    if parsed:
        watcher = Watcher(
            dbs,
            parsed,
            data,
            model=model,
            interval=interval,
            report=log.watch,
            max_bytes=max_file_mb << 20 if max_file_mb else None,
        )
        watcher.start()
    app = create_app(dbs, token=token, max_rps=max_rps, host=host, log=log)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        proxy_headers=False,  # the peer address is the client: X-Forwarded-For is not trusted
    )
    said = log

    class Speaking(uvicorn.Server):
        """Says when it has stopped: uvicorn raises the signal again once it has shut down,
        so a line after ``run`` would never be printed."""

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            await super().shutdown(sockets)
            said.stopped()

    log.started(dbs, host, sock.getsockname()[1])
    try:
        Speaking(config).run(sockets=[sock])
    finally:
        if watcher is not None:
            watcher.stop()
        sock.close()


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one), or a clear error."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UrnaError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise UrnaError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def _serve_ray(
    paths: list[Path],
    watches: list[str] | None,
    address: str,
    places: list[str],
    *,
    host: str,
    port: int,
    token: str | None,
    rps: float,
) -> None:
    from urna.format.catalog import is_collection
    from urna.server.ray_serve import parse_places, serve_on_ray

    if watches or len(paths) != 1 or not is_collection(paths[0]):
        raise UrnaError("--ray serves exactly one collection folder (no --watch)")
    serve_on_ray(
        paths[0],
        address=address,
        host=host,
        port=port,
        token=token,
        max_rps=rps,
        places=parse_places(places),
    )
