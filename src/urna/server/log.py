"""What the server says on stderr: what it serves and where, each request, watch rebuilds,
its shutdown. One line each; ``--log-json`` makes every line one JSON object (``event``
and its fields) for machines; ``--quiet`` turns the access log off.

Written by hand: uvicorn's access log names the peer and the raw request line (with the
query string, which may hold a user's question or a token), not the milliseconds; these
lines give method, path, status and time only.
"""

from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass, field
from typing import Any, TextIO

from urna.server.databases import Databases


@dataclass
class ServerLog:
    quiet: bool = False
    as_json: bool = False
    stream: TextIO = field(default_factory=lambda: sys.stderr)

    def _emit(self, event: str, text: str, **fields: Any) -> None:
        line = json.dumps({"event": event, **fields}, ensure_ascii=False) if self.as_json else text
        with contextlib.suppress(OSError, ValueError):  # a broken stderr never fails a request
            print(line, file=self.stream, flush=True)

    def started(self, dbs: Databases, host: str, port: int) -> None:
        """One line per corpus served, then the URLs."""
        for name in dbs.names():
            corpus = dbs.get(name)
            if corpus is None:
                continue
            words = "text and vector" if corpus.has_text_index else "vector only"
            self._emit(
                "serving",
                f"serving {name}: {corpus.n_chunks} chunks, {corpus.model}, {words} "
                f"({corpus.path})",
                name=name,
                chunks=corpus.n_chunks,
                model=corpus.model,
                text_search=corpus.has_text_index,
                path=str(corpus.path),
            )
        shown = f"[{host}]" if ":" in host else host
        base = f"http://{shown}:{port}"
        for event, label, url in (
            ("page", "search page", f"{base}/"),
            ("docs", "API docs   ", f"{base}/docs"),
            ("mcp", "MCP        ", f"{base}/mcp"),
        ):
            self._emit(event, f"{label} {url}", url=url)
        self._emit("ready", "ready (Ctrl-C stops)", host=host, port=port)

    def access(self, method: str, path: str, status: int, ms: float) -> None:
        if not self.quiet:
            text = f"{method} {path} {status} {ms:.1f} ms"
            self._emit("request", text, method=method, path=path, status=status, ms=round(ms, 3))

    def watch(self, message: str) -> None:
        self._emit("watch", message, message=message)

    def stopped(self) -> None:
        self._emit("stopped", "stopped")
