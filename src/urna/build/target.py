"""What every write into one collection shares: the folder, the options files are written
with, the model, the chunk window and the recipe. A catalog records the options
(``write_options``) so ``urna compact DIR`` writes exactly as the build did (``target_of``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from urna.build.progress import Mode
from urna.build.spec import PRESETS, BuildSpec
from urna.build.summary import Report, quiet
from urna.embed.base import Embedder
from urna.embed.precision import PRECISIONS, asked_precision
from urna.embed.registry import bundled, resolve
from urna.errors import BuildError, FormatError, UrnaError
from urna.format.build_options import check_build_options
from urna.format.catalog import Catalog, is_collection, read_catalog
from urna.format.reader import Container
from urna.format.regular import inside
from urna.index.tokenize import language_of


@dataclass(frozen=True)
class Target:
    spec: BuildSpec
    folder: Path
    embedder: Embedder
    max_tokens: int
    recipe: str
    use_cache: bool = True
    progress: Mode = "off"  # how the writer shows long stages (``build/progress.py``)
    tell: Report = quiet  # where a piped stage's progress lines go

    def path(self, name: str) -> Path:
        return self.folder / name


def digest(parts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8") + b"\n")
    return "sha256:" + h.hexdigest()


def relative_roots(spec: BuildSpec, folder: Path) -> list[str]:
    """The spec's source roots (``BuildSpec.roots``) relative to ``folder``."""
    return [Path(os.path.relpath(r, folder.resolve())).as_posix() for r in spec.roots]


def write_options(target: Target) -> dict[str, Any]:
    """The options a compaction needs to write files as the build wrote them."""
    spec = target.spec
    roots = relative_roots(spec, target.folder)
    return {
        "model": spec.model,
        "max_tokens": target.max_tokens,
        "overlap_tokens": spec.overlap_tokens,
        "preset": spec.preset,
        "dtype": spec.dtype,
        "bm25": spec.bm25,
        "rerank_copy": spec.rerank_copy,
        "compress": spec.compress,
        "spaces": [list(s) for s in spec.spaces],
        "metadata": spec.metadata,
        "source_root": Path(os.path.relpath(spec.base, target.folder)).as_posix(),
        **({"source_roots": roots[1:]} if len(roots) > 1 else {}),
    }


def target_of(
    folder: Path,
    catalog: Catalog,
    model_path: Path | None = None,
    embedder: Embedder | None = None,
    model: str | None = None,
) -> Target:
    """The target a collection's head was written for (compaction of a built collection).
    The model is the one the user names (``model``, ``model_path``), else the recorded one
    when it is a bundled name: a catalog never chooses a hub model or a folder to read."""
    o = catalog.build
    if not o:
        raise BuildError(
            f"{folder} was built before collections recorded their build options: run "
            "`urna build SOURCES -o DIR` once to update it, then compact"
        )
    check_options(o, folder)
    spec = BuildSpec(
        sources=(),
        output=folder,
        base=(folder / o["source_root"]).resolve(),
        model=model or _recorded_model(o["model"], folder, model_path),
        model_path=model_path,
        max_tokens=o["max_tokens"],
        overlap_tokens=o["overlap_tokens"],
        dtype=o["dtype"],
        compress=o["compress"],
        preset=o["preset"],
        bm25=o["bm25"],
        lang=language_of(o.get("tokenizer")),
        rerank_copy=o["rerank_copy"],
        spaces=tuple((a, b) for a, b in o["spaces"]),
        metadata=dict(o["metadata"]),
        recorded_roots=tuple(
            (folder / r).resolve() for r in (o["source_root"], *o.get("source_roots", []))
        ),
    )
    embedder = embedder or resolve(
        spec.model, model_path=model_path, precision=recorded_precision(folder)
    )
    if embedder.model_hash != catalog.model_hash:
        raise BuildError(
            f"model {spec.model} here has model_hash {embedder.model_hash}; the collection "
            f"was built with {catalog.model_hash}"
        )
    return Target(spec, folder, embedder, o["max_tokens"], catalog.recipe)


def same_model(folder: Path, catalog: Catalog, embedder: Embedder) -> None:
    """Refuse to write another model's vectors beside the collection's."""
    if catalog.model_hash != embedder.model_hash:
        raise BuildError(
            f"{folder} holds vectors of {catalog.model} ({catalog.model_hash}); "
            f"{embedder.name} ({embedder.model_hash}) would make another collection: give "
            f"--model {catalog.model} to update it, or --new to start over (the retained "
            "versions stay answerable with --at)"
        )


def _recorded_model(name: Any, folder: Path, model_path: Path | None) -> str:
    if bundled(name) or (model_path is not None and isinstance(name, str)):
        return str(name)
    raise BuildError(
        f"{folder} records the model {name!r}, which urna loads only when you name it: "
        "give --model NAME (or --model-path FOLDER)"
    )


def check_options(options: Any, folder: Path) -> None:
    """The recorded options, checked as ``validate`` checks them, and those a compaction
    would act on: the preset is one this urna has, and every space's model is bundled."""
    try:
        check_build_options(options)
    except FormatError as exc:
        raise BuildError(f"{folder}: {exc.reason}; rebuild it (urna build ... --new)") from None
    if not options:
        return  # an older urna recorded none
    if options["preset"] not in PRESETS:
        raise BuildError(f"{folder}: the catalog's preset {options['preset']!r} is unknown")
    for name, model in options["spaces"]:
        if not bundled(model):
            raise BuildError(
                f"{folder}: space {name!r} records the model {model!r}, which urna loads only "
                "when you name it; build the collection again with its spec"
            )


def recorded_precision(output: Path) -> str | None:
    """The precision ``auto`` keeps for an existing file or collection at ``output``
    (``embed/precision.py``): the one its vectors were embedded in, so that an update reuses
    them and the embedding cache's and writes shards alike. None where ``--precision`` names
    one, or nothing readable is there (a damaged output is the writer's to refuse)."""
    if asked_precision() != "auto":
        return None
    try:
        if is_collection(output):
            files = [s.file for s in read_catalog(output)[0].shards if s.file]
            if not files:
                return None
            path = inside(output, files[0])
        elif output.is_file():
            path = output
        else:
            return None
        with Container(path, verify="trusted") as container:
            found = container.manifest.get("embed_precision", "float32")
    except (UrnaError, OSError, ValueError):
        return None
    return found if found in PRECISIONS else None


def existing_shards(output: Path) -> int | None:
    """An existing collection's shard count: ``build SOURCES -o DIR`` updates it as it is."""
    if not is_collection(output):
        return None
    try:
        return len(read_catalog(output)[0].shards)
    except UrnaError:
        return None


@dataclass(frozen=True)
class Recorded:
    options: dict[str, Any]  # the build options a spec takes, as the collection recorded them
    base: Path | None  # the folder its source_uris are relative to


RECORDED = ("model", "overlap_tokens", "dtype", "compress", "preset", "rerank_copy", "bm25")


def recorded_options(output: Path, new: bool = False) -> Recorded:
    """What an existing collection at ``output`` was built with: ``urna build SOURCES -o
    DIR`` then updates it as it is, from any folder, unless an option says otherwise.
    Damaged options are refused (``new``: ignored, the build starts over)."""
    if not is_collection(output):
        return Recorded({}, None)
    try:
        build = read_catalog(output)[0].build
    except UrnaError:
        return Recorded({}, None)  # the writer says what is wrong with the head
    try:
        check_options(build, output)
    except BuildError:
        if new:
            return Recorded({}, None)
        raise
    options = {k: build[k] for k in RECORDED if build.get(k) is not None}
    if not bundled(options.get("model")):
        options.pop("model", None)  # the user names any other model (--model)
    root = build.get("source_root")
    return Recorded(options, (output / root).resolve() if isinstance(root, str) else None)
