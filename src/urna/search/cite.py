"""Citations: ``urna://<content_hash>/<chunk_id>``, parsed, resolved and checked at the source."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from urna.errors import CitationError, NotFoundError, SourceMismatchError
from urna.format.regular import NotRegular, open_regular
from urna.ingest.loaders import is_derived, load

CITATION_RE = re.compile(r"urna://(sha256:[0-9a-f]{64})/(sha256:[0-9a-f]{64})")


@dataclass(frozen=True)
class Citation:
    content_hash: str
    chunk_id: str

    def __str__(self) -> str:
        return f"urna://{self.content_hash}/{self.chunk_id}"


def parse_citation(text: str) -> Citation:
    match = CITATION_RE.fullmatch(text.strip())
    if not match:
        raise CitationError(
            f"invalid citation: expected urna://sha256:<64 hex>/sha256:<64 hex>, got {text!r}"
        )
    return Citation(match.group(1), match.group(2))


def resolve_source(source_uri: str, root: Path) -> Path:
    """The local file a source_uri names (``file://`` URI, absolute path, or relative to
    root), which must lie inside ``root`` once symlinks and ``..`` are resolved: a shared
    file's source_uri never makes urna read (and compare) a file outside the source root."""
    if source_uri.startswith("file://"):
        path = Path(unquote(urlparse(source_uri).path))
    elif re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", source_uri):
        raise CitationError(f"source {source_uri} is not a local file, so it cannot be re-read")
    else:
        path = Path(source_uri)
    full = path if path.is_absolute() else root / path
    try:
        real, boundary = full.resolve(), root.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        raise CitationError(f"source {source_uri} cannot be resolved") from None
    if not real.is_relative_to(boundary):
        raise CitationError(
            f"source {source_uri} is outside the source root {boundary}: refused "
            "(pass --source-root to choose the folder sources are read from)"
        )
    return real


def verify_source(path: Path, byte_start: int, byte_end: int, expected: bytes) -> None:
    """Re-read bytes [byte_start, byte_end) of ``path``; raise unless they equal ``expected``."""
    try:
        with os.fdopen(open_regular(path), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if byte_end > size:
                raise SourceMismatchError(
                    f"source span mismatch: {path} has {size} bytes, the span ends at {byte_end}"
                )
            handle.seek(byte_start)
            actual = handle.read(byte_end - byte_start)
    except FileNotFoundError:
        raise NotFoundError(f"source not found: {path}") from None
    except IsADirectoryError:
        raise CitationError(f"source is a directory: {path}") from None
    except PermissionError:
        raise CitationError(f"source not readable: {path}") from None
    except NotRegular:
        raise CitationError(f"source is not a regular file: {path}") from None
    except OSError as exc:
        raise CitationError(f"cannot read source {path}: {exc.strerror or exc}") from None
    if actual != expected:
        at = next(
            (i for i, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b), None
        )
        where = (
            f"first difference at byte {byte_start + at}" if at is not None else "lengths differ"
        )
        raise SourceMismatchError(
            f"source span mismatch: bytes {byte_start}-{byte_end} of {path} differ from the stored "
            f"text ({where})"
        )


def verify_derived(
    path: Path,
    source_uri: str,
    byte_start: int,
    byte_end: int,
    expected: bytes,
    extractors: Mapping[str, int] | None = None,
) -> None:
    """Extract the source again, by the extractors the file was built with (``None``: the
    current ones), and compare the span of its extracted text."""
    if not path.is_file():
        raise NotFoundError(f"source not found: {path}")
    try:
        docs = load(path, source_uri.partition("#")[0], extractors)
    except Exception as exc:  # the loader's own error on a file that changed or broke
        raise SourceMismatchError(f"source {path} can no longer be read: {exc}") from None
    doc = next((d for d in docs if d.source_uri == source_uri), None)
    if doc is None:
        raise SourceMismatchError(f"source span mismatch: {path} no longer holds {source_uri}")
    actual = doc.data[byte_start:byte_end]
    if actual != expected:
        raise SourceMismatchError(
            f"source span mismatch: extracted text bytes {byte_start}-{byte_end} of {path} differ "
            "from the stored text"
        )


def check_source(
    source_uri: str,
    byte_start: int,
    byte_end: int,
    expected: bytes,
    roots: Sequence[Path],
    extractors: Mapping[str, int] | None = None,
) -> Path:
    """Check a chunk against its source: the file's bytes in the span (Markdown, text), or the
    span of the text extracted again (HTML, PDF, DOCX, JSONL and CSV records). Relative
    source_uris are read under the first of ``roots`` that holds them (a build names each
    file under the first root that has it). Returns the path read."""
    first: Exception | None = None
    for root in roots:
        try:
            path = resolve_source(source_uri.partition("#")[0], root)
            if is_derived(path):
                verify_derived(path, source_uri, byte_start, byte_end, expected, extractors)
            else:
                verify_source(path, byte_start, byte_end, expected)
        except (CitationError, NotFoundError, SourceMismatchError) as exc:
            # the first error that says more than "not under this root" is the one told
            if first is None or (
                isinstance(first, NotFoundError) and not isinstance(exc, NotFoundError)
            ):
                first = exc
            continue
        return path
    raise first if first is not None else CitationError("no source root to read from")


def roots_of(provenance: Mapping[str, Any], here: Path) -> list[Path]:
    """Every folder a file's build named sources relative to (its ``source_root``, then the
    ``source_roots`` of sources outside it), resolved from the file's folder ``here``."""
    first, rest = provenance.get("source_root"), provenance.get("source_roots")
    names = [first if isinstance(first, str) else "."]
    if isinstance(rest, list):
        names.extend(r for r in rest if isinstance(r, str))
    return [(here / name).resolve() for name in names]


def extractors_of(provenance: Mapping[str, Any]) -> dict[str, int]:
    """The extractor versions a file was built by (none recorded: the first ones)."""
    found = provenance.get("extractors")
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, int)}
