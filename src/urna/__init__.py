"""urna: offline retrieval in one portable, integrity-checked .urna file.

>>> import urna
>>> corpus = urna.open("notes.urna")            # every check of the format
>>> result = corpus.search(vector, k=5)           # exact cosine, ties in file order
>>> corpus.cite(result.hits[0].citation_id).text  # citations resolve and verify
"""

import os as _os

# OpenBLAS's idle worker threads spin for 2**28 cycles after every call; a BLAS call (the
# query encoder's) right before a scan on every core took the cores from it (1.6x slower,
# measured). A short timeout lets them sleep at once. It takes effect when numpy is first
# imported after urna (the CLI, the server); a value the user set is kept.
_os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

from urna.build.columns import ChunkInput
from urna.build.write import BuildResult, build
from urna.errors import (
    BuildError,
    CitationError,
    FileError,
    FormatError,
    IntegrityError,
    ModelError,
    ModelGateError,
    QueryError,
    SourceMismatchError,
    UrnaError,
)
from urna.format.chunks import Chunk
from urna.search.cite import Citation, parse_citation
from urna.search.collection import Collection
from urna.search.corpus import Corpus
from urna.search.info import Section
from urna.search.opening import open_path as open
from urna.search.protocol import Searchable
from urna.search.request import Query
from urna.search.result import Hit, SearchResult
from urna.version import __version__

__all__ = [
    "BuildError",
    "BuildResult",
    "Chunk",
    "ChunkInput",
    "Citation",
    "CitationError",
    "Collection",
    "Corpus",
    "FileError",
    "FormatError",
    "Hit",
    "IntegrityError",
    "ModelError",
    "ModelGateError",
    "Query",
    "QueryError",
    "SearchResult",
    "Searchable",
    "Section",
    "SourceMismatchError",
    "UrnaError",
    "__version__",
    "build",
    "open",
    "parse_citation",
]
