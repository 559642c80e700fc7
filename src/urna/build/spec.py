"""The build spec: a declarative TOML file, or the same thing made from zero-config arguments.

```toml
[output]
path = "out/notes.urna"      # relative to this file's folder
dtype = "float32"            # float32 | float16 | int8
shards = 4                   # optional: a collection folder of 4 shard files
compress = false             # zstd on the non-embedding sections
title = "My notes"

[model]
name = "minilm"              # see src/urna/embed/registry.py
# path = "models/minilm"     # load that model's files from a folder

[chunking]
max_tokens = 254             # default: the model's window
overlap_tokens = 0

[index]
preset = "hybrid"            # exact | compressed (float16) | tiny (int8 + HNSW) | hybrid
bm25 = true                  # override the preset's choice of the BM25 index
rerank_copy = false          # a float32 copy of quantized vectors, to rerank with

[[spaces]]                   # optional: more embedding spaces, each with its own model
name = "static"
model = "minilm-static"

[[sources]]
path = "docs"
include = ["**/*.md", "**/*.pdf"]   # default: every supported file
exclude = ["drafts/**"]

[metadata]
description = "..."          # title, description, version, license, authors
drop = ["draft"]             # document fields to leave out; rename = { old = "new" }

[[metadata.set]]             # fields set on every document under a path
path = "papers/"
fields = { kind = "paper" }
```
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from urna.build.fields import RULE_KEYS, FieldRules, parse_rules
from urna.build.write import DTYPES
from urna.embed.registry import DEFAULT_MODEL
from urna.errors import BuildError
from urna.format.regular import describe, read_regular
from urna.index.languages import checked

METADATA_KEYS = ("title", "description", "version", "license", "authors")


@dataclass(frozen=True)
class Source:
    path: Path
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    follow_links: bool = False  # a file link out of the folder is read (ripgrep's -L)
    max_bytes: int | None = None  # a larger file is skipped and reported (None: no limit)
    ignore_files: bool = True  # .gitignore and .urnaignore in the folder are respected


@dataclass(frozen=True)
class BuildSpec:
    sources: tuple[Source, ...]
    output: Path
    base: Path  # source_uris of the sources inside this folder are relative to it
    model: str = DEFAULT_MODEL
    model_path: Path | None = None
    max_tokens: int | None = None
    overlap_tokens: int = 0
    dtype: str | None = None  # None: as the preset says
    compress: bool = False
    preset: str = "hybrid"
    bm25: bool | None = None  # None: as the preset says
    rerank_copy: bool = False
    spaces: tuple[tuple[str, str], ...] = ()  # (space name, model name): extra embedding spaces
    shards: int | None = None  # a collection of this many shards (output is then a folder)
    metadata: dict[str, Any] = field(default_factory=dict)
    fields: FieldRules = field(default_factory=FieldRules)  # [metadata] set, rename, drop
    recorded_roots: tuple[Path, ...] = ()  # a compaction's roots, as its collection records
    lang: str | None = None  # the language BM25 reads words in; None: English, undeclared

    @property
    def roots(self) -> tuple[Path, ...]:
        """The folders source_uris are relative to: ``base`` first, then each source's own
        folder where it lies outside ``base``, in source order (``root_of``)."""
        if self.recorded_roots:
            return self.recorded_roots
        found = [self.base.resolve()]
        for source in self.sources:
            root = root_of(source.path, found[0])
            if root not in found:
                found.append(root)
        return tuple(found)


def _lang(value: str | None) -> str | None:
    return None if value is None else checked(value)


def root_of(path: Path, base: Path) -> Path:
    """The folder a source's source_uris are relative to (``base`` resolved): ``base`` where
    the source lies inside it, else the folder given (a file's own folder), so a source_uri
    never climbs out of its root with ``..``."""
    real = path.resolve()
    if real == base or base in real.parents:
        return base
    return real if real.is_dir() else real.parent


def _table(doc: dict[str, Any], key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    value = doc.get(key, {})
    if not isinstance(value, dict):
        raise BuildError(f"spec: [{key}] must be a table")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise BuildError(f"spec: unknown key {key}.{unknown[0]} (allowed: {', '.join(allowed)})")
    return value


def _typed(table: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = table.get(key)
    if value is not None and (
        not isinstance(value, kind) or (isinstance(value, bool) and kind is int)
    ):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise BuildError(f"spec: {where}.{key} must be {names}, got {value!r}")
    return value


def _globs(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise BuildError(f"spec: {where} must be a list of glob strings")
    return tuple(value)


PRESETS = {
    # preset: (dtype, bm25, hnsw + graph)
    "exact": ("float32", False, False),
    "compressed": ("float16", False, False),
    "tiny": ("int8", False, True),
    "hybrid": ("float32", True, True),
}


def _preset(name: str) -> str:
    if name not in PRESETS:
        raise BuildError(f"preset must be one of {', '.join(PRESETS)}, got {name!r}")
    return name


def resolved(spec: BuildSpec) -> tuple[str, bool, bool]:
    """(dtype, bm25, hnsw and graph) after the preset and any explicit choice."""
    dtype, bm25, ann = PRESETS[spec.preset]
    return (spec.dtype or dtype, bm25 if spec.bm25 is None else spec.bm25, ann)


def _spaces(doc: dict[str, Any]) -> list[tuple[str, str]]:
    spaces = []
    raw_spaces = doc.get("spaces", [])
    if not isinstance(raw_spaces, list):
        raise BuildError("spec: spaces must be an array of tables ([[spaces]])")
    for i, entry in enumerate(raw_spaces):
        if not isinstance(entry, dict) or sorted(entry) != ["model", "name"]:
            raise BuildError(f"spec: spaces[{i}] needs exactly a name and a model")
        if not all(isinstance(entry[k], str) and entry[k] for k in ("name", "model")):
            raise BuildError(f"spec: spaces[{i}] name and model must be non-empty strings")
        spaces.append((entry["name"], entry["model"]))
    if len({name for name, _ in spaces}) != len(spaces):
        raise BuildError("spec: space names must be unique")
    return spaces


MAX_SPEC = 1 << 20


def load_spec(path: Path, *, output: Path | None = None) -> BuildSpec:
    try:
        raw = read_regular(path, MAX_SPEC)
    except FileNotFoundError:
        raise BuildError(f"spec not found: {path}") from None
    except IsADirectoryError:
        raise BuildError(f"spec is a directory: {path}") from None
    except OSError as exc:
        raise BuildError(f"spec: {describe(path, exc)}") from None
    if len(raw) > MAX_SPEC:
        raise BuildError(f"spec {path} is larger than {MAX_SPEC} bytes")
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise BuildError(f"spec {path} is not valid TOML: {exc}") from None
    unknown = sorted(
        set(doc) - {"output", "model", "chunking", "index", "sources", "spaces", "metadata"}
    )
    if unknown:
        raise BuildError(f"spec: unknown table [{unknown[0]}]")
    base = path.resolve().parent
    out = _table(doc, "output", ("path", "dtype", "compress", "title", "shards"))
    model = _table(doc, "model", ("name", "path"))
    chunking = _table(doc, "chunking", ("max_tokens", "overlap_tokens"))
    metadata = dict(_table(doc, "metadata", METADATA_KEYS + RULE_KEYS))
    rules = parse_rules({k: metadata.pop(k) for k in RULE_KEYS if k in metadata})
    index = _table(doc, "index", ("preset", "bm25", "rerank_copy", "lang"))
    sources_raw = doc.get("sources")
    if not isinstance(sources_raw, list) or not sources_raw:
        raise BuildError("spec: at least one [[sources]] entry with a path is required")
    sources = []
    for i, entry in enumerate(sources_raw):
        if not isinstance(entry, dict):
            raise BuildError(f"spec: sources[{i}] must be a table")
        bad = sorted(set(entry) - {"path", "include", "exclude", "follow_links", "ignore_files"})
        if bad:
            raise BuildError(f"spec: unknown key sources[{i}].{bad[0]}")
        src = _typed(entry, "path", str, f"sources[{i}]")
        if not src:
            raise BuildError(f"spec: sources[{i}].path is required")
        sources.append(
            Source(
                base / src,
                _globs(entry.get("include"), f"sources[{i}].include"),
                _globs(entry.get("exclude"), f"sources[{i}].exclude"),
                bool(_typed(entry, "follow_links", bool, f"sources[{i}]")),
                ignore_files=_typed(entry, "ignore_files", bool, f"sources[{i}]") is not False,
            )
        )
    spaces = _spaces(doc)
    out_path = _typed(out, "path", str, "output")
    if output is None and not out_path:
        raise BuildError("spec: output.path is required (or pass -o)")
    dtype = _typed(out, "dtype", str, "output")
    if dtype is not None and dtype not in DTYPES:
        raise BuildError(f"spec: output.dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    shards = _typed(out, "shards", int, "output")
    if shards is not None and shards < 1:
        raise BuildError(f"spec: output.shards must be >= 1, got {shards}")
    max_tokens = _typed(chunking, "max_tokens", int, "chunking")
    overlap = _typed(chunking, "overlap_tokens", int, "chunking") or 0
    title = _typed(out, "title", str, "output")
    meta = dict(metadata)
    if title:
        meta["title"] = title
    for key, value in meta.items():
        if key == "authors":
            if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
                raise BuildError("spec: metadata.authors must be a list of strings")
        elif not isinstance(value, str):
            raise BuildError(f"spec: metadata.{key} must be a string")
    model_path = _typed(model, "path", str, "model")
    return BuildSpec(
        sources=tuple(sources),
        output=output if output is not None else base / out_path,
        base=base,
        model=_typed(model, "name", str, "model") or DEFAULT_MODEL,
        model_path=base / model_path if model_path else None,
        max_tokens=max_tokens,
        overlap_tokens=overlap,
        dtype=dtype,
        compress=bool(_typed(out, "compress", bool, "output")),
        preset=_preset(_typed(index, "preset", str, "index") or "hybrid"),
        bm25=_typed(index, "bm25", bool, "index"),
        lang=_lang(_typed(index, "lang", str, "index")),
        rerank_copy=bool(_typed(index, "rerank_copy", bool, "index")),
        spaces=tuple(spaces),
        metadata=meta,
        fields=rules,
        shards=shards,
    )


def spec_from_args(
    paths: list[Path],
    output: Path,
    *,
    follow_links: bool = False,
    max_bytes: int | None = None,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    ignore_files: bool = True,
    **options: Any,
) -> BuildSpec:
    """Zero-config: every supported file under the given paths.

    source_uris are relative to the current folder when every input lies inside
    it, else to the inputs' common parent folder (so a folder given by an
    absolute path yields ``docs/...``, not ``../../docs/...``).
    """
    if not paths:
        raise BuildError("nothing to build: give at least one file or folder")
    cwd = Path.cwd().resolve()
    resolved = []
    for p in paths:
        try:
            resolved.append(p.resolve())
        except (OSError, RuntimeError):  # RuntimeError: a symlink loop
            raise BuildError(f"cannot resolve {p}: a symlink loop or an unreadable path") from None
    if all(r == cwd or cwd in r.parents for r in resolved):
        base = cwd
    else:
        base = Path(os.path.commonpath([r.parent for r in resolved]))
    return BuildSpec(
        sources=tuple(
            Source(p, include, exclude, follow_links, max_bytes, ignore_files) for p in paths
        ),
        output=output,
        base=base,
        **{k: v for k, v in options.items() if v is not None},
    )
