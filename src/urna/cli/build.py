"""The build verb: from documents (PATH... -o OUT), a SPEC.toml, or --from-jsonl vectors."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import click

from urna import library
from urna.build.progress import Mode
from urna.build.ray_build import ray_runner
from urna.build.spec import PRESETS, BuildSpec, Source, load_spec, spec_from_args
from urna.build.target import existing_shards, recorded_options
from urna.build.write import DTYPES, build
from urna.build.writer import build_file, build_folder
from urna.cli import render
from urna.cli.common import device_option, out, precision_option
from urna.format.manifest import PLACEHOLDER_MODEL_HASH
from urna.index.languages import checked
from urna.ingest.chunks_jsonl import read_chunks_jsonl

# Options a spec may also set: given on the command line, they override the spec.
SPEC_OPTIONS = (
    "model",
    "model_path",
    "max_tokens",
    "overlap_tokens",
    "dtype",
    "compress",
    "preset",
    "rerank_copy",
    "bm25",
    "lang",
)


@click.command(name="build")
@click.argument("inputs", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path), help="The .urna file to write.")
@click.option(
    "--name",
    default=None,
    metavar="NAME",
    help="Write into the library (URNA_HOME) as NAME, in place of -o; then use -l NAME.",
)
@click.option(
    "--from-jsonl",
    "from_jsonl",
    type=click.Path(path_type=str),
    help="Chunks that already carry vectors: text, source_uri, byte_start, byte_end, embedding.",
)
@click.option("--model", default=None, help="Embedding model (documents) or its name (JSONL).")
@click.option("--model-path", type=click.Path(path_type=Path), help="Load the model from a folder.")
@click.option("--dim", type=click.IntRange(min=1), help="Embedding dimension (with --from-jsonl).")
@click.option(
    "--model-hash",
    default=PLACEHOLDER_MODEL_HASH,
    show_default="the placeholder (text queries refuse it)",
    help="sha256:<64 hex> of the model's files (with --from-jsonl).",
)
@click.option(
    "--chunker-version",
    default="external/1",
    show_default=True,
    help="Chunker name recorded with --from-jsonl.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=8),
    help="Chunk size limit in model tokens, at least 8 (default: the model's window).",
)
@click.option(
    "--overlap", "overlap_tokens", type=int, default=None, help="Tokens a chunk may repeat."
)
@click.option("--dtype", type=click.Choice(DTYPES), default=None)
@click.option("--compress", is_flag=True, default=None, help="zstd on the non-embedding sections.")
@click.option("--title", default=None)
@click.option(
    "--preset",
    type=click.Choice(tuple(PRESETS)),
    default=None,
    help="exact: float32; compressed: float16; tiny: int8 + HNSW; hybrid (default): "
    "float32 + HNSW + BM25 + chunk graph.",
)
@click.option(
    "--rerank-copy",
    is_flag=True,
    default=None,
    help="Keep a float32 copy of quantized vectors to rerank with.",
)
@click.option("--bm25/--no-bm25", default=None, help="Write the BM25 index (preset decides).")
@click.option(
    "--lang",
    default=None,
    metavar="CODE",
    callback=lambda _c, _p, v: None if v is None else checked(v),
    help="The language BM25 reads the words in (stemmer, stop words): en (default), de, fr, "
    "es, it, nl, pt, ru, sv, ...; or auto: each document in its own (its lang field, else "
    "detected), stored as its lang field.",
)
@click.option(
    "--shards",
    type=click.IntRange(1, 1024),
    default=None,
    help="Write a collection: a folder of this many shard files and a catalog (-o names it).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --shards: build shards in this many local processes.",
)
@click.option(
    "--ray",
    "ray_address",
    default=None,
    metavar="ADDRESS|local",
    help="With --shards: build one shard per task on a Ray cluster (or a local one).",
)
@click.option("--dry-run", is_flag=True, help="Discover, load and chunk; embed and write nothing.")
@click.option("--rebuild", is_flag=True, help="Ignore the embedding cache: embed every chunk.")
@click.option(
    "--no-merge",
    "no_merge",
    is_flag=True,
    help="Collections: write an update as a segment and deletions only (`urna compact` merges).",
)
@click.option(
    "--include",
    "includes",
    multiple=True,
    metavar="GLOB",
    help="Read only the files a pattern matches (as .gitignore reads it; repeatable).",
)
@click.option(
    "--exclude",
    "excludes",
    multiple=True,
    metavar="GLOB",
    help="Skip the files a pattern matches (repeatable).",
)
@click.option(
    "--no-ignore",
    is_flag=True,
    help="Read what .gitignore and .urnaignore files in the sources ignore.",
)
@click.option(
    "--follow-links",
    is_flag=True,
    help="Read a file that a link in a source folder leads to outside it (default: skipped).",
)
@click.option(
    "--new",
    is_flag=True,
    help="Collections: start over (another model, or a head catalog that cannot be read); "
    "the retained versions stay answerable with --at.",
)
@click.option(
    "--progress/--quiet",
    default=None,
    help="Stage lines on stderr (default: when stderr is a terminal); --quiet also hides "
    "the progress of long stages (a bar on a terminal, a line every 5 s when piped).",
)
@device_option
@precision_option
def build_cmd(
    inputs: tuple[Path, ...],
    output: Path | None,
    name: str | None,
    from_jsonl: str | None,
    title: str | None,
    shards: int | None,
    jobs: int,
    ray_address: str | None,
    dry_run: bool,
    rebuild: bool,
    no_merge: bool,
    includes: tuple[str, ...],
    excludes: tuple[str, ...],
    no_ignore: bool,
    follow_links: bool,
    new: bool,
    progress: bool | None,
    **options: Any,
) -> None:
    """Build a .urna file: from documents (PATH... -o OUT), a SPEC.toml, or --from-jsonl vectors."""
    if name is not None:
        if output is not None:
            raise click.UsageError("give -o OUT or --name NAME, not both")
        output = library.target(name, collection=shards is not None)
    if from_jsonl is not None:
        if inputs:
            raise click.UsageError("--from-jsonl takes no other inputs")
        if output is None or options["model"] is None or options["dim"] is None:
            raise click.UsageError("--from-jsonl needs -o, --model and --dim")
        if shards is not None or ray_address:
            raise click.UsageError("--from-jsonl builds one file: leave out --shards and --ray")
        _build_jsonl(from_jsonl, output, title, options)
        return
    if not inputs:
        raise click.UsageError("give a SPEC.toml, or files and folders with -o OUT.urna")
    chosen = {key: options[key] for key in SPEC_OPTIONS}
    # How the sources are walked, as given on the command line (added to a spec's own).
    walk = Source(Path(), includes, excludes, follow_links, None, not no_ignore)
    spec = _spec(inputs, output, chosen, walk, new)
    if title:
        spec.metadata["title"] = title
    terminal = sys.stderr.isatty()
    show = terminal if progress is None else progress
    report = (lambda m: click.echo(m, err=True)) if show else (lambda m: None)
    # Long stages: a live bar on a terminal, a line every few seconds when piped (a log).
    mode: Mode = "off" if progress is False else "bar" if terminal else "lines"
    tell = (lambda m: click.echo(m, err=True)) if mode != "off" else (lambda m: None)
    if name is not None and shards is None and spec.shards is not None:
        spec = replace(spec, output=library.target(name, collection=True))
    shards = shards or spec.shards or existing_shards(spec.output)
    if shards is None and (jobs > 1 or ray_address):
        raise click.UsageError("--jobs and --ray build collections: add --shards N")
    if shards is not None:
        if dry_run:
            raise click.UsageError("--dry-run builds single files only")
        runner = ray_runner(ray_address, spec, report) if ray_address else None
        built = build_folder(
            spec,
            shards=shards,
            jobs=jobs,
            runner=runner,
            report=report,
            warn=lambda m: click.echo(f"warning: {m}", err=True),
            rebuild=rebuild,
            merge=not no_merge,
            new=new,
            progress=mode,
            tell=tell,
        )
        out(render.collection_summary(built))
        return
    summary = build_file(
        spec,
        report=report,
        warn=lambda m: click.echo(f"warning: {m}", err=True),
        dry_run=dry_run,
        use_cache=not rebuild,
        progress=mode,
        tell=tell,
    )
    out(render.build_summary(summary))


def _spec(
    inputs: tuple[Path, ...], output: Path | None, chosen: dict[str, Any], walk: Source, new: bool
) -> BuildSpec:
    """The spec a build runs: a SPEC.toml with the options given, or the files and folders
    given (an existing collection's recorded options and source root kept)."""
    if len(inputs) == 1 and inputs[0].suffix == ".toml":
        spec = load_spec(inputs[0], output=output)
        spec = replace(spec, **{k: v for k, v in chosen.items() if v is not None})
        sources = tuple(
            replace(
                s,
                include=s.include + walk.include,
                exclude=s.exclude + walk.exclude,
                follow_links=s.follow_links or walk.follow_links,
                ignore_files=s.ignore_files and walk.ignore_files,
            )
            for s in spec.sources
        )
        return replace(spec, sources=sources)
    if output is None:
        raise click.UsageError("building from files and folders needs -o OUT.urna")
    recorded = recorded_options(output, new)  # an update keeps what it was built with
    given = {k: v for k, v in chosen.items() if v is not None}
    spec = spec_from_args(
        list(inputs),
        output,
        follow_links=walk.follow_links,
        include=walk.include,
        exclude=walk.exclude,
        ignore_files=walk.ignore_files,
        **{**recorded.options, **given},
    )
    if recorded.base is not None and all(
        recorded.base == p.resolve() or recorded.base in p.resolve().parents for p in inputs
    ):
        spec = replace(spec, base=recorded.base)
    return spec


# What --from-jsonl cannot honour: its chunks come cut and embedded.
JSONL_REFUSED = {"model_path": "--model-path", "max_tokens": "--max-tokens",
                 "overlap_tokens": "--overlap"}  # fmt: skip


def _build_jsonl(from_jsonl: str, output: Path, title: str | None, options: dict[str, Any]) -> None:
    """A file of chunks that carry their vectors: the preset's indexes (``exact`` unless
    one is named: float32, no index), BM25 over the chunks' texts in the language given."""
    t0 = time.perf_counter()
    for key, flag in JSONL_REFUSED.items():
        if options.get(key) is not None:
            raise click.UsageError(f"{flag} does not apply to --from-jsonl: its chunks come cut")
    dim: int = options["dim"]
    preset_dtype, preset_bm25, ann = PRESETS[options["preset"] or "exact"]
    dtype: Any = options["dtype"] or preset_dtype
    bm25 = preset_bm25 if options["bm25"] is None else options["bm25"]
    data = read_chunks_jsonl(from_jsonl, dim)
    result = build(
        output,
        data.chunks(),
        embeddings=data.embeddings,
        model=options["model"],
        dim=dim,
        model_hash=options["model_hash"],
        chunker_version=options["chunker_version"],
        dtype=dtype,  # checked by click.Choice(DTYPES)
        compression="zstd" if options["compress"] else None,
        title=title,
        provenance={"source": "jsonl", "input": Path(from_jsonl).name},
        bm25=bm25,
        language=options["lang"] or "en",
        hnsw=ann,
        graph=ann,
        rerank_copy=bool(options["rerank_copy"]) and dtype != "float32",
    )
    elapsed = time.perf_counter() - t0
    out(
        "\n".join(
            [
                render.kv("wrote", result.path),
                render.kv("chunks", result.n_chunks),
                render.kv("dim", dim),
                render.kv("dtype", dtype),
                render.kv(
                    "indexes",
                    ", ".join(n for n, on in (("BM25", bm25), ("HNSW + graph", ann)) if on)
                    or "none",
                ),
                render.kv("size", f"{result.size} bytes"),
                render.kv("time", f"{elapsed:.3f} s"),
                render.kv("file_hash", result.file_hash),
                render.kv("content_hash", result.content_hash),
            ]
        )
    )


COMMANDS = (build_cmd,)
