"""Start the server: check the binding rules, load the databases, run uvicorn."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from urna.errors import UrnaError

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(paths: list[Path], *, host: str, port: int, token: str | None) -> None:
    token = token or os.environ.get("URNA_TOKEN") or None
    if not is_loopback(host) and not token:
        raise UrnaError(
            f"refusing to listen on {host} without a token: pass --token or set URNA_TOKEN "
            "(only loopback addresses may serve without one)"
        )
    try:
        import uvicorn

        from urna.server.app import create_app
        from urna.server.databases import load
    except ImportError:
        raise UrnaError("the server needs its extra: pip install 'urna[serve]'") from None
    dbs = load(paths)
    app = create_app(dbs, token=token)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
