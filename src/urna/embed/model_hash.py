"""``model_hash``: one SHA-256 over a model's files, the same on every machine.

The files are every regular file under the model folder, recursively, except
those whose path has a part starting with ``.`` (``.cache``, ``.gitattributes``)
or named ``__pycache__``. They are taken in order of their relative POSIX path
(UTF-8 bytes), and the hash is SHA-256 over ``urna:model_hash:v1\\n`` followed,
for each file, by: u32 path length, the path, u64 size, the 32-byte SHA-256 of
its content.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

from urna.errors import FileError

DOMAIN = b"urna:model_hash:v1\n"


def model_files(folder: Path) -> list[tuple[str, Path]]:
    out = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        if path.is_file():
            out.append((rel.as_posix(), path))
    return sorted(out, key=lambda item: item[0].encode("utf-8"))


def model_hash(folder: str | os.PathLike[str]) -> str:
    root = Path(folder)
    if not root.is_dir():
        raise FileError(f"model folder not found: {root}")
    files = model_files(root)
    if not files:
        raise FileError(f"model folder holds no files: {root}")
    h = hashlib.sha256(DOMAIN)
    for rel, path in files:
        raw = rel.encode("utf-8")
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        h.update(struct.pack("<I", len(raw)) + raw)
        h.update(struct.pack("<Q", path.stat().st_size))
        h.update(digest.digest())
    return "sha256:" + h.hexdigest()
