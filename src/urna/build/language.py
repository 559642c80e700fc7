"""Which language a build's text is in, to suggest ``--lang`` when it is not English.

A corpus is read in the language declared (``--lang``, the spec's ``[index] lang``); the
default is English, as before, so that a build never changes how it reads words on its own.
When nothing was declared and most of the text reads as another language BM25 can read
(``index/languages.py``), the build says so and names the option. The guess is py3langid's
(its model ships in the package) over a sample of the chunks spread through the corpus.
"""

from __future__ import annotations

from collections.abc import Sequence

from urna.index.languages import LANGUAGES

SAMPLE = 64  # chunks read, spread evenly through the corpus
CHARS = 400  # of each


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
