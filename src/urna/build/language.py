"""Which language a build's text is in, to suggest ``--lang`` when it is not English.

A corpus is read in the language declared (``--lang``, the spec's ``[index] lang``); the
default is English, as before, so that a build never changes how it reads words on its own.
When nothing was declared and most of the text reads as another language BM25 can read
(``index/languages.py``), the build says so and names the option. The guess is py3langid's
(its model ships in the package) over a sample of the chunks spread through the corpus.

With ``--lang auto`` each document keeps the language it declares in its ``lang`` field
and the others are given the one py3langid reads in their first ``DOCUMENT_CHARS``
characters; BM25 reads each chunk by that field (``index/mixed.py``), and the field is
stored, so a filter (``--where lang=de``) and a facet count by it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from urna.index.languages import LANGUAGES
from urna.index.mixed import FIELD
from urna.ingest.document import Document

SAMPLE = 64  # chunks read, spread evenly through the corpus
CHARS = 400  # of each
DOCUMENT_CHARS = 4000  # of a document, under --lang auto


def suggestion(texts: Sequence[str]) -> str | None:
    """A line suggesting ``--lang CODE`` when the texts read as a language other than
    English that BM25 can read in its own way; None otherwise (or without py3langid)."""
    if not texts:
        return None
    try:
        import py3langid
    except ImportError:
        return None
    step = max(1, len(texts) // SAMPLE)
    sample = " ".join(t[:CHARS] for t in texts[::step][:SAMPLE])
    lang = str(py3langid.classify(sample)[0])
    if lang == "en" or lang not in LANGUAGES:
        return None
    return (
        f"the documents read as {LANGUAGES[lang][0].capitalize()} ({lang}); --lang {lang} "
        "reads their words in it (stemming and stop words), where the default reads English"
    )


def with_language(fields: Mapping[str, Any], doc: Document) -> dict[str, Any]:
    """A document's fields with its language: the ``lang`` it declares (a string), else
    the one detected in its text (None without py3langid: it is then read as English)."""
    out = dict(fields)
    declared = out.get(FIELD)
    if isinstance(declared, str) and declared.strip():
        return out
    text = doc.data[: DOCUMENT_CHARS * 4].decode("utf-8", "replace")[:DOCUMENT_CHARS]
    try:
        import py3langid
    except ImportError:
        return out
    out[FIELD] = str(py3langid.classify(text)[0])
    return out
