"""urna serve over real HTTP on loopback: the compatible routes, /v1, errors, the token."""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import needs_models, run
from tests.server_helpers import Server, free_port, q, start_watch, text_file

GOLDEN = Path(__file__).parent / "golden"

pytestmark = [
    needs_models,
    pytest.mark.skipif(importlib.util.find_spec("fastapi") is None, reason="needs the serve extra"),
]
QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"
TOKEN = "s3cret-token"
SERVED: list[Path] = []  # the folder the module's server serves


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("served")
    SERVED[:] = [folder]
    docs = folder / "docs"
    shutil.copytree(QUICKSTART / "docs", docs)
    for name, extra in (("guide", []), ("plain", ["--no-bm25"])):
        result = run("build", str(docs), "-o", str(folder / f"{name}.urna"), *extra)
        assert result.exit_code == 0, result.stderr
    server = Server([folder])
    yield server
    server.stop()


def test_health_and_list(served: Server) -> None:
    assert served.get("/api/health") == (200, {"status": "ok", "databases": 2})
    assert served.get("/api/list") == (200, {"databases": ["guide", "plain"]})


def test_combined_search_groups_by_source(served: Server) -> None:
    status, body = served.get(
        "/api/search?" + q({"db": "guide", "q": "how do I install urna on Linux", "limit": "5"})
    )
    assert status == 200 and set(body) == {"keyword", "semantic"}
    for branch in ("keyword", "semantic"):
        groups = body[branch]
        assert groups and groups[0]["source"] == "docs/guide/install.md"
        sources = [g["source"] for g in groups]
        assert len(sources) == len(set(sources))
        best = [max(m["score"] for m in g["matches"]) for g in groups]
        firsts = [g["matches"][0]["score"] for g in groups]
        assert best == firsts and firsts == sorted(firsts, reverse=True)  # by each group's best
        total = sum(len(g["matches"]) for g in groups)
        assert total <= 5
        for g in groups:
            for m in g["matches"]:
                assert isinstance(m["chunk"], int) and m["chunk"] >= 1 and m["content"]
    for g in body["semantic"]:
        assert all(m["score"] >= 0.3 for m in g["matches"])


@pytest.mark.parametrize(
    ("limit", "expected_max"),
    [(None, 10), ("abc", 10), ("0", 10), ("-4", 10), ("101", 10), ("1", 1), ("100", 100), ("3", 3)],
)
def test_limit_fall_back(served: Server, limit: str | None, expected_max: int) -> None:
    params = {"db": "guide", "q": "chunk citation model file urna", "target": "keyword"}
    _, everything = served.get("/api/search?" + q(params | {"limit": "100"}))
    matching = sum(len(g["matches"]) for g in everything["keyword"])
    assert matching > 10  # so that the fall-back to 10 is visible
    if limit is not None:
        params["limit"] = limit
    status, body = served.get("/api/search?" + q(params))
    assert status == 200
    assert sum(len(g["matches"]) for g in body["keyword"]) == min(expected_max, matching)


def test_targets(served: Server) -> None:
    base = {"db": "guide", "q": "verify a citation"}
    for target in ("keyword", "KEYWORD", "Keyword"):
        status, body = served.get("/api/search?" + q(base | {"target": target}))
        assert status == 200 and set(body) == {"keyword"}
    status, body = served.get("/api/search?" + q(base | {"target": "SeMaNtIc"}))
    assert status == 200 and set(body) == {"semantic"}
    status, body = served.get("/api/search?" + q(base | {"target": "both"}))
    assert status == 400 and body["error"]["code"] == "invalid_target"
    # The fixed-target aliases override any target parameter.
    status, body = served.get("/api/keyword?" + q(base | {"target": "semantic"}))
    assert status == 200 and set(body) == {"keyword"}
    status, body = served.get("/api/semantic?" + q(base | {"target": "keyword"}))
    assert status == 200 and set(body) == {"semantic"}


def test_empty_branches_are_lists(served: Server) -> None:
    status, body = served.get("/api/search?" + q({"db": "guide", "q": "zzzqqq xylophone"}))
    assert status == 200 and body["keyword"] == [] and isinstance(body["semantic"], list)
    status, body = served.get("/api/search?" + q({"db": "guide", "q": "the of and"}))
    assert status == 200 and body["keyword"] == []  # no tokens: empty, not an error
    # A query of punctuation only: both branches empty (the contract), never an error.
    status, body = served.get("/api/search?" + q({"db": "guide", "q": "?!...,;"}))
    assert status == 200 and body["keyword"] == [] and body["semantic"] == []


def test_a_file_without_bm25_has_an_empty_keyword_branch(served: Server) -> None:
    status, body = served.get("/api/search?" + q({"db": "plain", "q": "install urna"}))
    assert status == 200 and body["keyword"] == [] and body["semantic"]
    assert "errors" not in body  # nothing failed


def test_a_failing_branch_does_not_fail_the_other(tmp_path: Path) -> None:
    """Placeholder model hash: the semantic branch fails the gate, keyword still answers."""
    path = text_file(
        tmp_path / "gated.urna", dim=384, model="sentence-transformers/all-MiniLM-L6-v2"
    )
    server = Server([path])
    try:
        status, body = server.get("/api/search?" + q({"db": "gated", "q": "beavers rivers"}))
    finally:
        server.stop()
    assert status == 200
    assert body["keyword"][0]["source"] == "0.md"
    assert body["semantic"] == []
    assert body["errors"]["semantic"]["code"] == "model_gate"
    assert "placeholder" in body["errors"]["semantic"]["message"]


def test_missing_and_unknown(served: Server) -> None:
    for params, code, status in [
        ({"q": "x"}, "missing_parameter", 400),
        ({"db": "guide"}, "missing_parameter", 400),
        ({"db": "guide", "q": "  "}, "missing_parameter", 400),
        ({"db": "nope", "q": "x"}, "unknown_database", 404),
        ({"db": "guide", "q": "x" * 3000}, "query_too_long", 413),
    ]:
        got, body = served.get("/api/search?" + q(params))
        assert got == status and body["error"]["code"] == code, (params, body)
        assert set(body) == {"error"} and body["error"]["message"]


def test_openapi_describes_what_the_server_does(served: Server) -> None:
    import urllib.error
    import urllib.request

    _, doc = served.get("/openapi.json")
    search = doc["paths"]["/api/search"]["get"]
    assert [p["name"] for p in search["parameters"]] == ["db", "q", "limit", "target"]
    for path, operations in doc["paths"].items():
        for operation in operations.values():
            assert "422" not in operation["responses"], path  # invalid input is a 400
    assert "400" in doc["paths"]["/v1/search"]["get"]["responses"]
    request = urllib.request.Request(f"{served.base}/api/search", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    code, allow = caught.value.code, caught.value.headers["Allow"]
    caught.value.close()
    assert code == 405 and allow == "GET"


def test_v1_search_and_filters(served: Server) -> None:
    status, body = served.get("/v1/search?" + q({"db": "guide", "q": "model hash", "limit": "3"}))
    assert status == 200 and body["mode"] == "hybrid" and len(body["hits"]) == 3
    assert 1 <= body["strong"] <= 3  # the leading hits the page shows above its weaker fold
    hit = body["hits"][0]
    assert {
        "chunk_id",
        "score",
        "citation_id",
        "snippet",
        "section_path",
        "ranks",
        "text",
        "byte_start",
        "byte_end",
        "rank",
    } <= set(hit)
    assert set(hit["ranks"]) <= {"vector", "text"} and hit["rank"] == 1
    status, body = served.get(
        "/v1/search?"
        + q({"db": "guide", "q": "install", "mode": "text", "source": "docs/concepts/*"})
    )
    assert status == 200 and body["hits"]
    assert all(h["source_uri"].startswith("docs/concepts/") for h in body["hits"])
    status, body = served.get(
        "/v1/search?" + q({"db": "guide", "q": "install", "section": "Guide / Install"})
    )
    assert body["hits"] and all(
        h["section_path"].startswith("Guide / Install") for h in body["hits"]
    )
    for params in (
        {"db": "guide", "q": "x", "limit": "0"},
        {"db": "guide", "q": "x", "mode": "fuzzy"},
        {"db": "guide"},
    ):
        status, body = served.get("/v1/search?" + q(params))
        assert status == 400 and body["error"]["code"] == "bad_request"
    for text in ("   ", "?!...,;"):  # no letters or digits: the empty query's error
        status, body = served.get("/v1/search?" + q({"db": "guide", "q": text}))
        assert status == 400 and body["error"]["code"] == "bad_query", body
        assert "empty" in body["error"]["message"]
    status, body = served.get("/v1/search?" + q({"db": "plain", "q": "x", "mode": "text"}))
    assert status == 400 and "BM25" in body["error"]["message"]


def test_overview_for_the_landing_page(served: Server) -> None:
    status, body = served.get("/v1/overview")
    assert status == 200
    guide = next(d for d in body["databases"] if d["name"] == "guide")
    assert guide["documents"] == 5 and guide["chunks"] >= 5
    assert guide["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", guide["built"])
    # example queries are section titles below a document's own, from sources spread out
    assert 1 <= len(guide["examples"]) <= 4
    assert "Verifying a source" in guide["examples"] or "Model hash" in guide["examples"]
    assert "Guide" not in guide["examples"] and "Concepts" not in guide["examples"]


def test_v1_cite_and_databases(served: Server) -> None:
    _, body = served.get("/v1/search?" + q({"db": "guide", "q": "citations", "limit": "1"}))
    citation = body["hits"][0]["citation_id"]
    status, chunk = served.get("/v1/cite?" + q({"db": "guide", "citation": citation}))
    assert status == 200 and chunk["citation_id"] == citation and chunk["text"]
    status, body = served.get("/v1/cite?" + q({"db": "guide", "citation": "urna://nope"}))
    assert status == 400 and body["error"]["code"] == "citation"
    status, body = served.get("/v1/cite?" + q({"db": "plain", "citation": citation}))
    assert status == 400 and "content_hash mismatch" in body["error"]["message"]
    status, body = served.get("/v1/databases")
    assert [d["name"] for d in body["databases"]] == ["guide", "plain"]
    status, body = served.get("/v1/databases/guide")
    assert status == 200 and "path" not in body and body["manifest"]["n_chunks"] >= 10
    assert served.get("/v1/databases/..%2Fetc")[0] == 404
    status, body = served.get("/openapi.json")
    assert status == 200 and "/api/search" in body["paths"] and "/v1/search" in body["paths"]
    status, body = served.get("/no/such/route")
    assert status == 404 and body["error"]["code"] == "not_found"


def test_v1_search_speaks_the_query_language_and_groups(served: Server) -> None:
    asked = {"db": "guide", "q": "citations", "limit": "3", "group": "document"}
    status, body = served.get("/v1/search?" + q(asked))
    assert status == 200 and "grouped by document" in body["note"]
    assert len({h["source_uri"] for h in body["hits"]}) == len(body["hits"]) > 0
    assert all(h["more"] >= 0 for h in body["hits"])
    status, body = served.get("/v1/search?" + q({"db": "guide", "q": '"byte span" -pdf'}))
    assert status == 200 and body["hits"]
    assert all("pdf" not in h["text"].lower() for h in body["hits"])
    status, body = served.get("/v1/search?" + q({"db": "guide", "q": "bees colour:red"}))
    assert status == 400 and "unknown field 'colour'" in body["error"]["message"]
    # Two databases as one: one ranking, each hit naming its database.
    status, body = served.get(
        "/v1/search?" + q({"db": "guide,plain", "q": "citations", "mode": "vector"})
    )
    assert status == 200 and {h["corpus"] for h in body["hits"]} == {"guide", "plain"}
    status, body = served.get("/v1/search?" + q({"db": "guide,plain", "q": "x", "at": "abc"}))
    assert status == 400


def test_v1_source_serves_the_cited_file_from_its_recorded_root(served: Server) -> None:
    _, body = served.get("/v1/search?" + q({"db": "guide", "q": "citations", "limit": "1"}))
    hit = body["hits"][0]
    url = served.base + "/v1/source?" + q({"db": "guide", "citation": hit["citation_id"]})
    with urllib.request.urlopen(url, timeout=60) as response:
        data, headers = response.read(), response.headers
    assert data == (SERVED[0] / hit["source_uri"]).read_bytes()
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Content-Security-Policy"].startswith("sandbox")
    assert headers["X-Urna-Span"] == f"{hit['byte_start']}-{hit['byte_end']}"
    status, body = served.get("/v1/source?" + q({"db": "guide", "citation": "urna://nope"}))
    assert status == 400 and body["error"]["code"] == "citation"
    status, body = served.get("/v1/source?" + q({"db": "nope", "citation": hit["citation_id"]}))
    assert status == 404


def test_token_and_binding_rules(served: Server, tmp_path: Path) -> None:
    files = sorted(Path(served.proc.args[4]).glob("*.urna"))  # type: ignore[index]
    guarded = Server(files[:1], "--token", TOKEN)
    try:
        assert guarded.get("/api/health")[0] == 200
        for path in ("/api/list", "/api/search?db=guide&q=x", "/v1/databases", "/"):
            status, body = guarded.get(path)
            assert status == 401 and body["error"]["code"] == "unauthorized"
            assert guarded.get(path, token="wrong")[0] == 401
        assert guarded.get("/api/list", token=TOKEN) == (200, {"databases": ["guide"]})
    finally:
        guarded.stop()
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "urna",
            "serve",
            str(files[0]),
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "URNA_TOKEN"},
    )
    assert (
        refused.returncode == 1
        and "refusing to listen on 0.0.0.0 without a token" in refused.stderr
    )
    bad = tmp_path / "bad.urna"
    bad.write_bytes(b"not a urna file" * 20)
    broken = subprocess.run(
        [sys.executable, "-m", "urna", "serve", str(bad), "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert broken.returncode == 1 and broken.stderr.startswith("Error: magic mismatch")


def test_watched_folder_stays_indexed(tmp_path: Path) -> None:
    import threading

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("# Alpha\n\nThe aardvark sleeps in the afternoon.\n")
    (folder / "b.md").write_text("# Beta\n\nBeavers build dams on rivers.\n")
    proc, port = start_watch("notes", folder, tmp_path / "data", 0.3, stderr=subprocess.PIPE)
    server = Server.__new__(Server)
    server.port, server.base, server.proc = port, f"http://127.0.0.1:{port}", proc
    log: list[str] = []
    stop = threading.Event()
    failures: list[tuple[int, Any]] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read()  # type: ignore[union-attr]
            try:
                server.get("/api/health")
                break
            except OSError:
                time.sleep(0.2)
        threading.Thread(target=lambda: log.extend(proc.stderr), daemon=True).start()  # type: ignore[arg-type]

        def hammer() -> None:  # queries keep running through every rebuild
            while not stop.is_set():
                status, body = server.get("/api/search?" + q({"db": "notes", "q": "rivers"}))
                if status != 200 or body.get("errors"):
                    failures.append((status, body))

        worker = threading.Thread(target=hammer, daemon=True)
        worker.start()

        def finds(word: str) -> bool:
            _, body = server.get("/v1/search?" + q({"db": "notes", "q": word, "mode": "text"}))
            return any(word in h["text"].lower() for h in body.get("hits", []))

        def eventually(check, what: str) -> None:  # type: ignore[no-untyped-def]
            end = time.monotonic() + 60
            while time.monotonic() < end:
                if check():
                    return
                time.sleep(0.2)
            pytest.fail(f"{what} did not happen; server log: {log}")

        assert finds("aardvark")
        (folder / "c.md").write_text("# Gamma\n\nA gazelle grazes near the gorge.\n")
        eventually(lambda: finds("gazelle"), "a new file becoming findable")
        (folder / "a.md").write_text("# Alpha\n\nThe anteater wakes at dawn.\n")
        eventually(lambda: finds("anteater") and not finds("aardvark"), "an edit showing")
        (folder / "b.md").unlink()
        eventually(lambda: not finds("beavers"), "deleted content disappearing")
        stop.set()
        worker.join(timeout=30)
        # A FIFO named like a document never blocks the watcher: later changes still show.
        os.mkfifo(folder / "pipe.md")
        (folder / "d.md").write_text("# Delta\n\nDolphins dive deep.\n")
        eventually(lambda: finds("dolphins"), "a change beside a FIFO showing")

        def gone() -> bool:
            status, _ = server.get("/v1/search?" + q({"db": "notes", "q": "dolphins"}))
            return status == 404

        # Emptied, then deleted: nothing that was there stays searchable.
        for name in ("a.md", "c.md", "d.md"):
            (folder / name).unlink()
        eventually(gone, "an emptied folder no longer being served")
        (folder / "pipe.md").unlink()
        folder.rmdir()
        time.sleep(1.0)
        assert gone() and proc.poll() is None
        folder.mkdir()
        (folder / "e.md").write_text("# Epsilon\n\nEels eat at night.\n")
        eventually(lambda: finds("eels"), "a recreated folder being served again")
    finally:
        stop.set()
        proc.terminate()
        proc.wait(timeout=20)
        if proc.stderr:
            proc.stderr.close()
    assert failures == []
    builds = [line for line in log if line.startswith("watch: notes is version")]
    assert len(builds) >= 4, log
    # The first build embeds everything; each later one only the chunks that changed.
    embedded = [int(line.split(" embedded")[0].rsplit(", ", 1)[1]) for line in builds]
    assert embedded[0] == 2 and all(n <= 1 for n in embedded[1:]), builds


def test_read_gives_a_chunk_between_its_neighbours(served: Server) -> None:
    status, body = served.get("/v1/search?" + q({"db": "guide", "q": "install on linux"}))
    assert status == 200 and body["terms"] == ["instal", "linux"]
    hit = body["hits"][0]
    status, read = served.get(
        "/v1/read?" + q({"db": "guide", "citation": hit["citation_id"], "before": "2"})
    )
    assert status == 200, read
    assert read["chunk"]["citation_id"] == hit["citation_id"]
    before, after = read["before"], read["after"]
    assert 1 <= len(before) <= 2 and len(after) <= 1
    spans = [(c["byte_start"], c["byte_end"]) for c in [*before, read["chunk"], *after]]
    assert spans == sorted(spans) and {c["source_uri"] for c in before} == {hit["source_uri"]}
    for params in ({"before": "21"}, {"after": "-1"}, {"citation": "urna://x"}):
        status, error = served.get(
            "/v1/read?" + q({"db": "guide", "citation": hit["citation_id"], **params})
        )
        assert status in (400, 422) and "error" in error


def test_request_rate_is_bounded(served: Server) -> None:
    files = sorted(Path(served.proc.args[4]).glob("*.urna"))  # type: ignore[index]
    limited = Server(files[:1], "--max-rps", "5")
    try:
        statuses = [limited.get("/api/list") for _ in range(30)]
        codes = [s for s, _ in statuses]
        assert codes.count(200) >= 5 and 429 in codes
        body = next(b for s, b in statuses if s == 429)
        assert body["error"]["code"] == "rate_limited"
        assert all(limited.get("/api/health")[0] == 200 for _ in range(20))  # never limited
    finally:
        limited.stop()


def test_forwarded_for_does_not_bypass_the_rate_bound(served: Server) -> None:
    import urllib.error
    import urllib.request

    files = sorted(Path(served.proc.args[4]).glob("*.urna"))  # type: ignore[index]
    limited = Server(files[:1], "--max-rps", "5")
    try:
        codes = []
        for i in range(30):  # every request claims another client through a proxy header
            request = urllib.request.Request(
                f"{limited.base}/api/list", headers={"X-Forwarded-For": f"10.0.{i // 250}.{i}"}
            )
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    codes.append(response.status)
            except urllib.error.HTTPError as exc:
                codes.append(exc.code)
                exc.close()
        assert 429 in codes and codes.count(200) < 30
    finally:
        limited.stop()


def test_a_served_file_rewritten_in_place_does_not_take_the_server_down(tmp_path: Path) -> None:
    """The server maps a private copy: truncating or overwriting the file it was started
    on (in place, not by rename) cannot fault it, and it keeps answering from what it
    verified at start."""
    path = text_file(tmp_path / "live.urna")
    server = Server([path])
    try:
        search = "/v1/search?" + q({"db": "live", "q": "beavers rivers", "mode": "text"})
        before = server.get(search)
        size = path.stat().st_size
        with open(path, "r+b") as handle:  # truncate, then overwrite in place with zeros
            handle.truncate(64)
            handle.seek(0)
            handle.write(b"\0" * size)
        after = [server.get(search) for _ in range(5)]
        assert server.proc.poll() is None
    finally:
        server.stop()
    assert before[0] == 200 and before[1]["hits"][0]["source_uri"] == "0.md"
    assert all(a[0] == 200 and a[1]["hits"] == before[1]["hits"] for a in after)


def _lines(stream: Any) -> queue.Queue[str]:
    found: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [found.put(x) for x in stream], daemon=True).start()
    return found


def _next(found: queue.Queue[str]) -> str:
    return found.get(timeout=60).rstrip("\n")


def test_the_server_says_where_it_is_and_logs_each_request(tmp_path: Path) -> None:
    """Start lines (each corpus, the URLs), an access line per request, a line at shutdown;
    with --log-json each is one JSON object."""
    path = text_file(tmp_path / "animals.urna")
    server = Server([path], quiet=False)
    try:
        found = _lines(server.proc.stderr)
        start = [_next(found) for _ in range(5)]
        access = _next(found)  # the helper's health check, which it waited on
        server.get("/v1/nowhere")
        missing = _next(found)
    finally:
        server.stop()
    text = "\n".join([*start, access, missing]) + "\n"
    text = text.replace(str(path), "<path>").replace(str(server.port), "<port>")
    text = re.sub(r"\d+\.\d ms", "<ms> ms", text)
    golden = GOLDEN / "serve-start.txt"
    if os.environ.get("URNA_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()

    machine = Server([path], "--log-json", quiet=False)
    try:
        found = _lines(machine.proc.stderr)
        events = [json.loads(_next(found)) for _ in range(5)]
        request = json.loads(_next(found))  # the helper's health check
    finally:
        machine.proc.terminate()
        machine.proc.wait(timeout=20)
        stopped = json.loads(_next(found))
        machine.stop()
    assert [e["event"] for e in events] == ["serving", "page", "docs", "mcp", "ready"]
    assert events[0]["name"] == "animals" and events[-1]["port"] == machine.port
    assert request["event"] == "request" and request["path"] == "/api/health"
    assert request["status"] == 200 and request["ms"] >= 0
    assert stopped == {"event": "stopped"}

    quiet = Server([path])  # --quiet: the start lines, no access log
    try:
        found = _lines(quiet.proc.stderr)
        assert _next(found).startswith("serving animals:")
        for _ in range(4):
            _next(found)
        quiet.get("/api/health")
        quiet.proc.terminate()
        quiet.proc.wait(timeout=20)
        assert _next(found) == "stopped"
    finally:
        quiet.stop()


def test_a_busy_port_is_a_clear_error(tmp_path: Path) -> None:
    path = text_file(tmp_path / "animals.urna")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "urna", "serve", str(path), "--port", str(port)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    expected = f"Error: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert done.stderr.strip() == expected
