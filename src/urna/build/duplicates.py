"""Documents that say the same thing: stored once, the others skipped and reported.

Two documents are duplicates when their text is the same byte for byte (the extracted
text of a page, the bytes of a Markdown file: ``text_sha``), whatever their names or
metadata: a page copied into two folders, a file saved twice. Of each set the one with the
smallest source_uri is kept, so a full build and any run of updates keep the same one: an
update that adds a document sorting before a live duplicate replaces it, and a skipped
document is not recorded, so its file is read again by the next update and comes back when
the one kept goes. (A record of a JSONL or CSV file whose other records are stored comes
back only when that file changes or the collection is built again.) A document without
text is never a duplicate: it gives no chunk anyway.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from urna.ingest.document import Document


def text_sha(doc: Document) -> str:
    """The SHA-256 of a document's text (the extracted text of a derived one): two documents
    with the same are duplicates, whatever their names, metadata or markup ("" for a
    document without text: never a duplicate)."""
    return hashlib.sha256(doc.data).hexdigest() if doc.data.strip() else ""


def keepers(texts: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Of (source_uri, text_sha) pairs, each duplicate's uri and the uri kept for its text
    (the smallest, as UTF-8 bytes: the order documents are kept in)."""
    pairs = sorted(texts, key=lambda p: p[0].encode("utf-8"))
    first: dict[str, str] = {}
    for uri, sha in pairs:
        if sha:
            first.setdefault(sha, uri)
    return {uri: first[sha] for uri, sha in pairs if sha and first[sha] != uri}


def distinct(docs: list[Document]) -> tuple[list[Document], list[tuple[str, str]]]:
    """The documents with the duplicates left out, and (uri, reason) for each left out."""
    dropped = keepers((d.source_uri, text_sha(d)) for d in docs)
    kept = [d for d in docs if d.source_uri not in dropped]
    return kept, [(uri, f"the same text as {held}") for uri, held in sorted(dropped.items())]


def against(live: Mapping[str, str], new: list[Document]) -> dict[str, str]:
    """An update's duplicates: of the live documents (uri -> text_sha, those the update
    keeps) and the new ones, each duplicate (new, to skip, or live, to delete) and the uri
    kept for its text."""
    return keepers([*live.items(), *((d.source_uri, text_sha(d)) for d in new)])
