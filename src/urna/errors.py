"""The exception tree. Every error urna raises on purpose is an ``UrnaError``.

::

    UrnaError
    ├── FileError            a path is missing, a directory, or unreadable
    ├── FormatError          the file is not a valid .urna v1 container
    │   └── IntegrityError   a checksum or hash does not match the bytes
    ├── QueryError           a query (vector, k) is malformed
    ├── ModelError           an embedding model cannot be found, loaded or used
    ├── ModelGateError       a text query's embedder is not the model that built the file
    ├── CitationError        a citation is malformed or does not resolve
    │   ├── NotFoundError        its chunk or source is not there (HTTP 404)
    │   ├── ForeignCitationError it names a file this corpus does not hold
    │   └── SourceMismatchError  the cited source bytes no longer match
    └── BuildError           the input to a build is invalid

Each message is one line that says what was expected and what was found.
"""

from __future__ import annotations


class UrnaError(Exception):
    """Root of every error urna raises on purpose."""


class FileError(UrnaError):
    """A path is missing, is a directory, or cannot be read."""


class FormatError(UrnaError):
    """The file is not a valid .urna v1 container.

    ``check`` is the number of the failed open check (see docs/format.md) and
    ``section`` names the part of the file it concerns.
    """

    def __init__(self, message: str, *, check: int, section: str) -> None:
        self.reason = message
        self.check = check
        self.section = section
        super().__init__(f"{message} (check {check}, {section})")

    def __reduce__(self) -> tuple[object, ...]:  # crosses process boundaries (parallel builds)
        return _rebuild_format_error, (type(self), self.reason, self.check, self.section)


def _rebuild_format_error(
    kind: type[FormatError], reason: str, check: int, section: str
) -> FormatError:
    return kind(reason, check=check, section=section)


class IntegrityError(FormatError):
    """A checksum or hash stored in the file does not match its bytes."""


class QueryError(UrnaError):
    """A query is malformed: bad JSON, wrong dimension, NaN, zero norm, bad k."""


class ModelError(UrnaError):
    """An embedding model cannot be found, loaded or used."""


class ModelGateError(UrnaError):
    """The query embedder differs from the file's model (name, dimension or model hash)."""


class CitationError(UrnaError):
    """A citation is malformed, or does not resolve in this file."""


class NotFoundError(CitationError):
    """A well-formed citation whose chunk, or whose source file, is not there."""


class ForeignCitationError(CitationError):
    """The citation names a content hash that is no file of this corpus (another corpus
    may hold it)."""


class SourceMismatchError(CitationError):
    """The source file's bytes in the cited span differ from the stored text."""


class BuildError(UrnaError):
    """The input to a build is invalid (dimension, NaN, spans, empty...)."""


def missing_extra(package: str, extra: str = "embed") -> ModelError:
    """The error for an optional dependency that is not installed, naming the extra to add."""
    if not extra:
        return ModelError(f"{package} is not installed; run: pip install urna")
    return ModelError(
        f"{package} is not installed; run: pip install 'urna[{extra}]' (or scripts/setup {extra})"
    )
