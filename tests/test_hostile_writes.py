"""Nothing outside the folder, nothing the files did not ask for: a build or a watcher never
follows a link out of its sources, a collection's own files are never links or FIFOs, a
catalog never chooses a model, a network or a path, and no write loses a retained version.

Collections here are built with stored vectors (``tests/stored_vectors.py``) through the
writer's API; the CLI's own paths are checked where a model is at hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

import urna
from tests.conftest import assert_error, needs_models, run
from tests.stored_vectors import StoredVectors
from urna.build.spec import spec_from_args
from urna.build.writer import build_folder, compact_folder
from urna.errors import BuildError, FileError, FormatError, ModelError
from urna.format.catalog import CATALOG, Catalog, read_catalog
from urna.format.versions import chain
from urna.server.watch import snapshot

VECTORS = StoredVectors()


def _docs(folder: Path, n: int = 12) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"d{i:02d}.md").write_text(f"# Doc {i}\n\nwhales and krill, note {i}.\n")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "elsewhere" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("# Secret\n\nthe passphrase is swordfish.\n")
    return secret


def _build(src: Path, out: Path, shards: int = 2, **options: object) -> urna.Collection:
    build_folder(
        spec_from_args([src], out, preset="exact", bm25=True, **options),  # type: ignore[arg-type]
        shards=shards,
        embedder=VECTORS,
    )
    return urna.open(out)


def _sources(folder: Path) -> set[str]:
    with urna.open(folder) as opened:
        return {opened.chunk(i).source_uri for i in range(opened.n_chunks)}


def test_a_link_out_of_a_source_folder_is_not_followed(tmp_path: Path, outside: Path) -> None:
    src = tmp_path / "src"
    _docs(src, 3)
    (src / "leak.md").symlink_to(outside)
    (src / "alias.md").symlink_to(src / "d01.md")  # a link inside: the same document
    _build(src, tmp_path / "col").close()
    held = _sources(tmp_path / "col")
    assert not any("secret" in u or u.startswith("..") for u in held), held
    assert len(held) == 3
    _build(src, tmp_path / "followed", follow_links=True).close()
    assert any(u.endswith("secret.md") for u in _sources(tmp_path / "followed"))
    assert "leak.md" not in snapshot(src) and "alias.md" in snapshot(src)


def test_a_special_file_behind_a_link_is_never_read(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _docs(src, 2)
    os.mkfifo(tmp_path / "fifo.md")
    (src / "pipe.md").symlink_to(tmp_path / "fifo.md")
    t0 = time.monotonic()
    _build(src, tmp_path / "col", follow_links=True).close()
    assert time.monotonic() - t0 < 60 and len(_sources(tmp_path / "col")) == 2


@pytest.mark.parametrize("name", [".lock", "versions", ".stat-cache"])
@pytest.mark.parametrize("kind", ["link", "fifo", "wrong"])
def test_a_collections_own_files_are_never_links_or_fifos(
    tmp_path: Path, name: str, kind: str
) -> None:
    src, col = tmp_path / "src", tmp_path / "col"
    _docs(src)
    _build(src, col).close()
    head = (col / CATALOG).read_bytes()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = col / name
    if path.is_dir():
        for child in path.iterdir():
            (elsewhere / child.name).write_bytes(child.read_bytes())
            child.unlink()
        path.rmdir()
    else:
        path.unlink(missing_ok=True)
    if kind == "link":
        path.symlink_to(elsewhere if name == "versions" else elsewhere / name)
    elif kind == "fifo":
        os.mkfifo(path)
    elif name == "versions":
        path.write_text("not a folder")
    else:
        path.mkdir()
    before = sorted(p.name for p in elsewhere.iterdir())
    (src / "new.md").write_text("# New\n\nA new note.\n")
    with pytest.raises(FileError, match=name.strip(".")):
        build_folder(
            spec_from_args([src], col, preset="exact", bm25=True), shards=2, embedder=VECTORS
        )
    with pytest.raises(FileError):
        compact_folder(col, embedder=VECTORS)
    assert (col / CATALOG).read_bytes() == head  # nothing published
    assert sorted(p.name for p in elsewhere.iterdir()) == before  # nothing written outside


def _forge_build(col: Path, **build: object) -> None:
    catalog, _ = read_catalog(col)
    forged = replace(catalog, build={**catalog.build, **build})
    (col / CATALOG).write_bytes(forged.encode())


# ``urna ARGS...`` under an audit hook that records every network call and every file
# opened under /etc, written to the file named by the first argument.
AUDIT = """
import json, sys
seen = []
def hook(event, args):
    if event in ("socket.connect", "socket.getaddrinfo", "urllib.Request"):
        seen.append([event, repr(args)])
    elif event == "open" and str(args[0]).startswith("/etc"):
        seen.append([event, str(args[0])])
sys.addaudithook(hook)
out, sys.argv = sys.argv[1], ["urna", *sys.argv[2:]]
try:
    from urna.cli import main
    main()
finally:
    with open(out, "w") as handle:
        json.dump(seen, handle)
"""


@pytest.mark.parametrize("model", ["st:someorg/some-model", "st:/etc", "/etc"])
def test_a_catalog_never_chooses_a_model_network_or_path(tmp_path: Path, model: str) -> None:
    src, col = tmp_path / "src", tmp_path / "col"
    _docs(src)
    _build(src, col).close()
    (src / "d03.md").unlink()
    build_folder(
        spec_from_args([src], col, preset="exact", bm25=True),
        shards=2,
        embedder=VECTORS,
        merge=False,
    )
    _forge_build(col, model=model)
    events = tmp_path / "events.json"
    done = subprocess.run(
        [sys.executable, "-c", AUDIT, str(events), "compact", str(col)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HF_HUB_OFFLINE": "", "URNA_ALLOW_DOWNLOAD": ""},
    )
    assert done.returncode == 1 and done.stderr.startswith("Error: "), done.stderr
    assert "--model" in done.stderr and "Traceback" not in done.stderr
    assert json.loads(events.read_text()) == []
    with pytest.raises(BuildError, match="--model"):
        compact_folder(col)
    with pytest.raises(ModelError, match="not found"):  # the folder the user names, only
        compact_folder(col, model_path=tmp_path / "nowhere")


def test_validate_checks_every_recorded_build_option(tmp_path: Path) -> None:
    src, col = tmp_path / "src", tmp_path / "col"
    _docs(src)
    _build(src, col).close()
    (src / "d03.md").unlink()  # a deletion: compact has work to do
    spec = spec_from_args([src], col, preset="exact", bm25=True)
    build_folder(spec, shards=2, embedder=VECTORS, merge=False)
    good = (col / CATALOG).read_bytes()
    forgeries = ({"preset": "huge"}, {"max_tokens": "many"}, {"source_root": "/etc"})
    for forged in (*forgeries, {"spaces": [["a"]]}, {"bm25": None, "extra": 1}):
        _forge_build(col, **forged)
        with urna.open(col) as opened, pytest.raises(FormatError, match="build options"):
            opened.validate()
        with pytest.raises(BuildError, match="build options"):
            compact_folder(col, embedder=VECTORS)
        (col / CATALOG).write_bytes(good)
    compact_folder(col, embedder=VECTORS)
    with urna.open(col) as opened:
        opened.validate()


def test_a_damaged_head_never_erases_history(tmp_path: Path) -> None:
    src, col = tmp_path / "src", tmp_path / "col"
    _docs(src)
    _build(src, col).close()
    (src / "d05.md").write_text("# Doc 5\n\nplankton now.\n")
    _build(src, col).close()
    versions = [v for v, _ in chain(col)]
    assert len(versions) == 2
    files = set(os.listdir(col))
    raw = json.loads((col / CATALOG).read_text())
    (col / CATALOG).write_text(json.dumps(raw, indent=2))  # re-serialised: not canonical
    spec = spec_from_args([src], col, preset="exact", bm25=True)
    with pytest.raises(BuildError, match="--new"):
        build_folder(spec, shards=3, embedder=VECTORS)
    assert set(os.listdir(col)) == files
    build_folder(spec, shards=3, embedder=VECTORS, new=True)
    history = [v for v, _ in chain(col)]
    assert history[1:] == versions  # the new head follows the newest retained version
    for version in versions:
        with urna.open(col, at=version) as old:
            assert old.n_chunks > 0 and old.validate()


def test_another_model_is_refused_unless_the_build_starts_over(tmp_path: Path) -> None:
    src, col = tmp_path / "src", tmp_path / "col"
    _docs(src)
    _build(src, col).close()
    other = StoredVectors()
    other.model_hash = "sha256:" + "cd" * 32  # type: ignore[misc]
    spec = spec_from_args([src], col, preset="exact", bm25=True)
    with pytest.raises(BuildError, match="--new"):
        build_folder(spec, shards=4, embedder=other)
    build_folder(spec, shards=4, embedder=other, new=True)
    first, second = [c for _, c in chain(col)][:2]
    assert first.model_hash == other.model_hash and second.model_hash == VECTORS.model_hash


@needs_models
def test_the_cli_refuses_a_damaged_head_and_starts_over_with_new(tmp_path: Path) -> None:
    src, col = tmp_path / "src", tmp_path / "col"
    _docs(src, 4)
    assert (
        run("build", str(src), "-o", str(col), "--shards", "2", "--model", "static").exit_code == 0
    )
    raw = json.loads((col / CATALOG).read_text())
    (col / CATALOG).write_text(json.dumps(raw, indent=1))
    assert_error(run("build", str(src), "-o", str(col), "--shards", "2"), "--new")
    (src / "d01.md").write_text("# Doc 1\n\nchanged.\n")
    again = run("build", str(src), "-o", str(col), "--shards", "2", "--model", "static", "--new")
    assert again.exit_code == 0, again.stderr
    assert len(chain(col)) == 2


@needs_models
def test_the_watcher_skips_a_huge_file_and_stays_live(tmp_path: Path, outside: Path) -> None:
    """A 200 MB file in a watched folder is skipped and reported once; a small file saved
    beside it is searchable after one update; a link out of the folder is never indexed."""
    from urna.server.databases import Databases
    from urna.server.watch import Watch, Watcher

    docs = tmp_path / "docs"
    _docs(docs, 3)
    with open(docs / "huge.txt", "wb") as handle:
        handle.truncate(200 << 20)  # sparse: 200 MB that take no disk
    (docs / "leak.md").symlink_to(outside)
    dbs, said = Databases(), []
    watch = Watch("w", docs)
    watcher = Watcher(dbs, [watch], tmp_path / "data", model="static", report=said.append)
    t0 = time.monotonic()
    watcher.build(watch)
    (docs / "new.md").write_text("# New\n\nzyzzyva arrives beside the huge file.\n")
    watcher.build(watch)
    assert time.monotonic() - t0 < 120
    served = dbs.get("w")
    assert served is not None
    hits = served.search_text("zyzzyva", k=1, mode="text").hits
    assert hits and hits[0].source_uri.endswith("new.md")
    held = {served.chunk(i).source_uri for i in range(served.n_chunks)}
    assert not any("huge" in u or "secret" in u or "leak" in u for u in held), held
    assert sum("huge.txt" in line and "over the limit" in line for line in said) == 1, said


def test_errors_for_clients_name_files_relative_to_what_is_served(tmp_path: Path) -> None:
    from urna.server.databases import load

    src, col = tmp_path / "src", tmp_path / "served" / "col"
    _docs(src, 2)
    _build(src, col).close()
    dbs = load([col])
    absolute = f"source not found: {src.resolve()}/d00.md; catalog {col.resolve()}/catalog.json"
    said = dbs.public(absolute)
    assert said == "source not found: src/d00.md; catalog col/catalog.json", said  # its uri
    assert str(tmp_path) not in said


def _two_versions(tmp_path: Path) -> Path:
    src, col = tmp_path / "src", tmp_path / "col"
    _docs(src)
    _build(src, col).close()
    (src / "d02.md").write_text("# Doc 2\n\nplankton now.\n")
    (src / "d09.md").unlink()
    _build(src, col).close()
    return col


@pytest.mark.parametrize(
    ("forged", "said"),
    [
        ({"created": "not a time"}, "not a time"),
        ({"created": "2999-01-01T00:00:00.000000Z"}, "in the future"),
        ({"parent": None}, "no parent chain from the head reaches it"),
        ({"changes": {"added": 5, "changed": 0, "removed": 0}}, "its source tables say"),
    ],
)
def test_validate_checks_the_history(tmp_path: Path, forged: dict[str, object], said: str) -> None:
    from urna.format.versions import publish

    col = _two_versions(tmp_path)
    with urna.open(col) as opened:
        opened.validate()  # an honest history passes
    head, raw = read_catalog(col)
    on = {"parent": Catalog.version_of(raw)} if "changes" in forged else {}  # the next version
    publish(col, replace(head, **{**on, **forged}))  # type: ignore[arg-type]
    with urna.open(col) as opened, pytest.raises((FormatError, FileError), match=said):
        opened.validate()
    if "created" in forged and forged["created"] == "not a time":
        with pytest.raises(FileError, match="records created 'not a time'"):
            urna.open(col, at="2020-01-01").close()
