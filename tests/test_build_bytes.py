"""Every kind of data file urna writes keeps its bytes: single files, a collection's shards,
an update's segments, the merge policy's folds and merges, a compaction and the text table.

The golden hashes were first made by the two pipelines that wrote these files before the one
writer (``build/segment.py``) replaced them, and the one writer kept them; a change of what a
file records (its extractors, a source table's column) rewrites them on purpose
(``URNA_UPDATE_GOLDEN=1``). With stored vectors (``tests/stored_vectors.py``) the bytes
depend on no CPU's arithmetic. Segment names carry their parent version (whose
catalog records a time), so segments are compared by content, and catalogs without their
time, parent and segment names.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.stored_vectors import StoredVectors
from urna.build.spec import spec_from_args
from urna.build.writer import build_file, build_folder, compact_folder

GOLDEN = Path(__file__).parent / "golden" / "build-bytes.json"
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()  # noqa: SIM905


def _docs(folder: Path, n: int) -> None:
    folder.mkdir(parents=True)
    for i in range(n):
        body = [f"# Note {i}", "", f"## Part {i % 3}", ""]
        body += [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(9)) + f" v{i}.", ""]
        if i % 4 == 0:
            body += ["## More", "", " ".join(WORDS[(i * j) % len(WORDS)] for j in range(15)), ""]
        (folder / f"n{i:02d}.md").write_text("\n".join(body))


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _tree(folder: Path) -> dict[str, str]:
    out = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if not path.is_file() or name in ("catalog.json", ".lock", ".stat-cache"):
            continue
        if "versions" in path.parts:
            continue
        h = _sha(path)
        out["segment#" + h if name.startswith("segment-") else name] = h
    catalog = json.loads((folder / "catalog.json").read_text())
    for key in ("created", "parent", "superseded"):
        catalog.pop(key, None)
    for seg in catalog.get("segments", []):
        seg.pop("file", None)
    for shard in catalog.get("shards", []):
        shard["deleted"] = sorted(shard.get("deleted", []))
    body = json.dumps(catalog, sort_keys=True).encode()
    out["catalog*"] = hashlib.sha256(body).hexdigest()[:16]
    return out


def test_every_data_file_keeps_its_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("URNA_CACHE_DIR", str(tmp_path / "cache"))
    vectors = StoredVectors()
    src = Path("src")
    _docs(src, 160)
    got: dict[str, object] = {}
    for bm25 in (True, False):
        out = Path(f"one-exact-{bm25}.urna")
        build_file(spec_from_args([src], out, preset="exact", bm25=bm25), embedder=vectors)
        got[out.name] = _sha(out)
    coll = Path("coll")
    spec = spec_from_args([src], coll, preset="exact", bm25=True)
    build_folder(spec, shards=4, embedder=vectors)
    got["full"] = _tree(coll)
    (src / "n03.md").write_text("# Note 3\n\nrewritten text about omega and sigma.\n")
    (src / "new.md").write_text("# New\n\nA new note about kappa and theta.\n")
    (src / "n07.md").unlink()
    build_folder(spec, shards=4, embedder=vectors, merge=False)
    got["update"] = _tree(coll)
    for r in range(14):  # one new file each: segments, folds, then a merge of ten
        (src / f"extra{r}.md").write_text(f"# Extra {r}\n\nmu nu xi omicron {r} pi rho.\n")
        build_folder(spec, shards=4, embedder=vectors)
        got[f"update{r}"] = _tree(coll)
    got["segments_before_compact"] = len(
        json.loads((coll / "catalog.json").read_text())["segments"]
    )
    compact_folder(coll, embedder=vectors)
    got["compact"] = _tree(coll)
    if os.environ.get("URNA_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    expected = json.loads(GOLDEN.read_text())
    assert got.keys() == expected.keys()
    for step, files in expected.items():
        assert got[step] == files, step
