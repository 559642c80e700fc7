"""The documents stage: discover, load and chunk. Every data file's chunks come from here.

Documents are kept in one order, by source_uri as UTF-8 bytes, in a file as in every shard
and segment of a collection: ties between equal scores then break the same way in all of
them (by source, then by position in the source).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from urna.build.discover import Found, discover
from urna.build.duplicates import distinct, text_sha
from urna.build.fields import FieldRules
from urna.build.language import with_language
from urna.build.progress import Progress
from urna.build.spec import BuildSpec
from urna.build.summary import BuildSummary, Report
from urna.embed.base import Embedder
from urna.errors import BuildError, UrnaError
from urna.format.sources import SourceRow
from urna.ingest.chunker import CHUNKER_VERSION, ChunkSpan, chunk_documents
from urna.ingest.document import Document
from urna.ingest.loaders import load

STEP = 256  # files loaded, or documents chunked, between two looks at the progress


def chunker_version(max_tokens: int, overlap: int) -> str:
    return f"{CHUNKER_VERSION} max_tokens={max_tokens} overlap={overlap}"


def window(spec: BuildSpec, embedder: Embedder) -> int:
    """The chunk size limit in model tokens, checked against the model's window."""
    max_tokens = spec.max_tokens if spec.max_tokens is not None else embedder.max_tokens
    if max_tokens < 8:
        raise BuildError(f"max_tokens must be at least 8, got {max_tokens}")
    if not 0 <= spec.overlap_tokens < max_tokens // 2:
        raise BuildError(
            f"overlap_tokens must be in [0, {max_tokens // 2}), got {spec.overlap_tokens}"
        )
    if max_tokens > embedder.max_tokens:
        raise BuildError(
            f"max_tokens {max_tokens} exceeds the window of {embedder.name} "
            f"({embedder.max_tokens} tokens): longer chunks would be truncated"
        )
    return max_tokens


def canonical_order(doc: Document) -> bytes:
    return doc.source_uri.encode("utf-8")


def found_files(spec: BuildSpec, summary: BuildSummary | None, warn: Report) -> list[Found]:
    """The supported files under the spec's sources; the others reported and skipped, and
    so is the source a documentation generator copied beside the page it rendered."""
    files, skipped = discover(spec.sources, spec.base)
    files, copies = rendered_sources(files)
    skipped.extend(copies)
    for path, reason in skipped:
        warn(f"skipped {path}: {reason}")
    if summary is not None:
        summary.skipped = [(str(p), r) for p, r in skipped]
    return files


def rendered_sources(files: list[Found]) -> tuple[list[Found], list[tuple[Path, str]]]:
    """Split off the sources Sphinx keeps beside the pages it rendered (``_sources/x.rst.txt``
    or ``_sources/x.txt`` for ``x.html``): indexed, every answer would come twice."""
    pages = {f.source_uri for f in files if f.source_uri.endswith((".html", ".htm"))}
    kept, copies = [], []
    for found in files:
        uri = found.source_uri
        before, mark, after = uri.rpartition("_sources/")
        if mark and (before == "" or before.endswith("/")) and after.endswith(".txt"):
            stem = after.removesuffix(".txt")
            stem = stem.rsplit(".", 1)[0] if "." in stem.rsplit("/", 1)[-1] else stem
            page = next(
                (before + stem + x for x in (".html", ".htm") if before + stem + x in pages), None
            )
            if page is not None:
                copies.append((found.path, f"the source of the rendered page {page}"))
                continue
        kept.append(found)
    return kept, copies


def load_all(
    files: Sequence[Found], spec: BuildSpec, summary: BuildSummary, warn: Report, shown: Progress
) -> list[Document]:
    """Every document of these files, in source order, duplicates left out and reported
    (``build/duplicates.py``); ``shown`` advances as files are read."""
    docs: list[Document] = []
    for at in range(0, len(files), STEP):
        some = files[at : at + STEP]
        docs.extend(
            doc
            for _, found in load_files(some, summary, warn, spec.fields, spec.lang)
            for doc in found
        )
        shown.advance(len(some))
    docs.sort(key=canonical_order)
    docs, dropped = distinct(docs)
    for uri, reason in dropped:
        warn(f"skipped {uri}: {reason}")
    summary.skipped.extend(dropped)
    summary.documents -= len(dropped)
    return docs


def load_files(
    files: Sequence[Found],
    summary: BuildSummary | None,
    warn: Report,
    rules: FieldRules | None = None,
    lang: str | None = None,
) -> list[tuple[Found, list[Document]]]:
    """Each readable file's documents, their metadata as the spec's rules leave it
    (``build/fields.py``), with their language under ``lang`` auto
    (``build/language.py``); a file that cannot be read is reported and skipped."""
    out = []
    rules = rules or FieldRules()
    for found in files:
        try:
            docs = load(found.path, found.source_uri)
            for doc in docs:
                doc.metadata = rules.apply(doc)
                if lang == "auto":
                    doc.metadata = with_language(doc.metadata, doc)
        except (UrnaError, ValueError, OSError) as exc:
            reason = str(exc) or type(exc).__name__
        except Exception as exc:  # a parser library's own error on a malformed file
            reason = f"unreadable {found.kind} ({type(exc).__name__}: {exc})"
        else:
            out.append((found, docs))
            if summary is not None:
                summary.files += 1
                summary.documents += len(docs)
            continue
        warn(f"skipped {found.path}: {reason}")
        if summary is not None:
            summary.skipped.append((str(found.path), reason))
    return out


def file_sha(path: str | Path) -> str:
    """The SHA-256 of a file's bytes ("" when it cannot be read: it is then loaded)."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                h.update(block)
    except OSError:
        return ""
    return h.hexdigest()


def doc_sha(doc: Document) -> str:
    """A document's fingerprint: its kind, bytes and metadata (as the spec's rules left it)."""
    h = hashlib.sha256(doc.kind.encode("utf-8") + b"\0" + doc.data + b"\0")
    h.update(json.dumps(doc.metadata, sort_keys=True, default=str).encode("utf-8"))
    return h.hexdigest()


@dataclass(frozen=True)
class Origin:
    """A loaded document and the file it came from."""

    doc: Document
    file: str  # the file's source_uri
    file_sha: str


def chunk(
    docs: Sequence[Document], embedder: Embedder, spec: BuildSpec, max_tokens: int
) -> list[ChunkSpan]:
    """The chunks of these documents, in their order."""
    pieces = chunk_documents(
        list(docs), embedder.count_tokens, max_tokens=max_tokens, overlap_tokens=spec.overlap_tokens
    )
    return [s for group in pieces for s in group]


def rows_for(origins: Sequence[Origin], spans: Sequence[ChunkSpan]) -> list[SourceRow]:
    """Each document's row, with its chunk range in a file of these spans (both in source
    order; a document may give no chunk)."""
    rows, at = [], 0
    for o in origins:
        lo = at
        while at < len(spans) and spans[at].source_uri == o.doc.source_uri:
            at += 1
        uri = o.doc.source_uri
        rows.append(SourceRow(uri, o.file, o.file_sha, doc_sha(o.doc), lo, at, text_sha(o.doc)))
    if at != len(spans):
        raise AssertionError("spans out of source order")  # chunk_documents keeps doc order
    return rows
