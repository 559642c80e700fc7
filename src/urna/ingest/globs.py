"""Path patterns as ``.gitignore`` and ripgrep read them (pathspec's GitIgnoreSpec): a pattern
without ``/`` matches a file or folder name at any depth (``taxes*`` keeps
``docs/taxes.md``), one with ``/`` is anchored at the root, ``**`` crosses folders and a
folder keeps everything under it. A record of a JSONL or CSV file (``data.jsonl#7``) is
matched by its file's path and by its whole source_uri, so ``*.jsonl`` keeps every record and
``data.jsonl#7`` one. Case sensitive, like the paths it matches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from urna.errors import QueryError

MAX_PATTERN = 500


@dataclass(frozen=True)
class PathGlob:
    pattern: str
    _spec: Any = field(default=None, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        import pathspec

        text = self.pattern
        if not isinstance(text, str) or not text.strip():
            raise QueryError("invalid source filter: expected a non-empty pattern")
        if len(text) > MAX_PATTERN:
            raise QueryError(f"source filter of {len(text)} characters, at most {MAX_PATTERN}")
        if text[0] in "!#":
            raise QueryError(
                f"invalid source filter {text!r}: a pattern cannot start with {text[0]} "
                f"(escape it as \\{text[0]})"
            )
        spec = pathspec.GitIgnoreSpec.from_lines([text])
        if all(p.include is None for p in spec.patterns):  # pathspec reads it as no pattern
            raise QueryError(
                f"invalid source filter {text!r}: it matches nothing (an unclosed [ ?); "
                "a pattern is a path glob as in .gitignore, e.g. 'docs/**/*.md'"
            )
        object.__setattr__(self, "_spec", spec)

    def __reduce__(self) -> tuple[type[PathGlob], tuple[str]]:
        return PathGlob, (self.pattern,)  # sent to a remote shard as its text

    def keeps(self, source_uri: str) -> bool:
        path = source_uri.partition("#")[0]
        spec = self._spec
        return bool(spec.match_file(path) or (path != source_uri and spec.match_file(source_uri)))
