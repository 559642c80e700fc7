"""``urna find``: search for people, printed as fluree's ``doc search`` prints it.

One block per hit: rank, score, file and section path (the per-method scores and ranks on a
fused hit), a snippet centred on the query's words, the citation; the weaker matches
(``search/strength.py``) under their own heading; then a closing line.
``--json`` prints the hits as a list of objects (``score``, ``chunk``, ``document``, ``file``,
``path``, ``text``, ``ranks`` on a fused hit, and the citation and span fields).
"""

from __future__ import annotations

import json
import os
import posixpath
import time
from typing import Any

import click

from urna.cli.common import (
    FILTERS,
    file_argument,
    file_command,
    hits_option,
    open_corpus,
    out,
    query_options,
)
from urna.cli.render import rank_label
from urna.search.request import query_from
from urna.search.result import Hit, SearchResult
from urna.search.snippet import around
from urna.search.strength import RULE, strong_count

PATH_WIDTH = 48
METHODS = (("vector", 2), ("text", 1))  # the fused methods, each score's decimals


def short_path(path: str, width: int = PATH_WIDTH) -> str:
    """A section path cut from the left, whole parts first: ``… / c. Last part``."""
    if len(path) <= width:
        return path
    parts = path.split(" / ")
    kept = parts[-1]
    for part in reversed(parts[:-1]):
        if len(part) + len(kept) + 3 + 4 > width:
            break
        kept = f"{part} / {kept}"
    if len(kept) + 4 > width:
        return "…" + kept[-(width - 1) :]
    return f"… / {kept}"


def methods_part(hit: Hit) -> str:
    """``vector 0.53 #10 · text 11.1 #1``: each method's own score and rank on a fused hit."""
    parts = []
    for method, decimals in METHODS:
        r = hit.ranks.get(method)
        if r is not None:
            parts.append(f"{method} {r['score']:.{decimals}f} #{rank_label(r)}")
    return " · ".join(parts)


def _style(text: str, **styles: Any) -> str:
    return text if os.environ.get("NO_COLOR") else click.style(text, **styles)


def hit_snippet(hit: Hit, terms: list[str]) -> str:
    """The snippet, Markdown markup left out, the words that matched in bold (on a
    terminal): its highlights, or the words starting as the terms do (a vector hit)."""
    text, spans = around(hit.text, hit.source_uri, hit.highlights or (), terms)
    out, at = [], 0
    for start, end in spans:
        out += [text[at:start], _style(text[start:end], bold=True, fg="yellow")]
        at = end
    return "".join(out) + text[at:]


def _block(h: Hit, terms: list[str], fused: bool) -> str:
    where = f"{h.corpus}: {h.source_uri}" if h.corpus else h.source_uri
    head = f"{h.rank}. {_style(f'{h.score:.3f}', bold=True)} {_style(where, bold=True)}"
    if h.section_path:
        head += f" {short_path(h.section_path)}"
    if fused:
        head += f"   {_style(methods_part(h), dim=True)}"
    if h.more:
        head += f"   {_style(f'+{h.more} more from this document', dim=True)}"
    indent = " " * (len(str(h.rank)) + 2)
    return f"{head}\n{indent}{hit_snippet(h, terms)}\n{indent}{_style(h.citation_id, dim=True)}"


def render(result: SearchResult, query: str, elapsed_ms: float) -> str:
    """The strong hits, then the weaker ones under their own heading (``search/strength.py``),
    then a closing line."""
    fused = result.mode == "hybrid"
    blocks = [_block(h, result.terms, fused) for h in result.hits]
    strong = strong_count(result.hits)
    weaker = len(blocks) - strong
    if weaker:
        blocks.insert(strong, _style(f"Weaker matches ({RULE} score):", dim=True))
    if not blocks:
        kept_none = result.n_searched == 0 and result.note
        blocks.append(
            f"{result.note[0].upper()}{result.note[1:]}."
            if kept_none
            else f"No chunk matches {query!r}."
        )
    n = len(result.hits)
    counts = f"{n} result(s)" + (f", {weaker} weaker" if weaker else "")
    if result.facets is not None:
        blocks.append(facet_lines(result.facets))
    blocks.append(f"({counts}, {result.mode}, {elapsed_ms:.0f} ms)")
    return "\n\n".join(blocks)


def facet_lines(facets: dict[str, Any]) -> str:
    """``field: value (count) · ...`` a line each, under what was counted."""
    lines = [_style(f"Facets, over {facets['over']} ({facets['chunks']} chunks):", dim=True)]
    for name, values in facets["fields"].items():
        shown = " · ".join(f"{v['value']} ({v['count']})" for v in values) or "(none)"
        lines.append(f"  {name}: {shown}")
    return "\n".join(lines)


def record(hit: Hit, fused: bool, terms: list[str]) -> dict[str, Any]:
    """One hit of ``find --json``: fluree's keys, then the citation and the span."""
    return {
        "score": hit.score,
        "chunk": hit.chunk_id,
        "document": hit.source_uri,
        "file": posixpath.basename(hit.source_uri),
        "path": hit.section_path,
        "text": hit.text,
        **({"ranks": hit.ranks} if fused else {}),
        "rank": hit.rank,
        "citation_id": hit.citation_id,
        "content_hash": hit.content_hash,
        "source_uri": hit.source_uri,
        "byte_start": hit.byte_start,
        "byte_end": hit.byte_end,
        "page": hit.page,
        "snippet": hit.snippet or around(hit.text, hit.source_uri, terms=terms)[0],
        **({"more": hit.more} if hit.more is not None else {}),
        **({"corpus": hit.corpus} if hit.corpus is not None else {}),
    }


@file_command("find")
@file_argument
@click.argument("query")
@hits_option("limit", "-n", "Hits to return (-n, fluree's name, also works).")
@query_options(
    "mode", "fusion", "model_path", "group", "facets", "typos", "lang", "vector_index", *FILTERS
)
@click.option("--json", "as_json", is_flag=True, help="Print the hits as a list of objects.")
def find(file: str, query: str, limit: int, asked: dict[str, Any], as_json: bool) -> None:
    """Search a file, a collection or a library corpus (-l NAME) and read the answers: each
    hit's place, a snippet around the query's words, and its citation.

    QUERY reads a search box's syntax: "a phrase", -word, +word, field:value,
    field:>=2020, field:[a TO b] (a query starting with - follows --)."""
    t0 = time.perf_counter()
    with open_corpus(file) as corpus:
        result = corpus.run(query_from(text=query, k=limit, **asked))
    elapsed_ms = (time.perf_counter() - t0) * 1000
    if as_json:
        records = [record(h, result.mode == "hybrid", result.terms) for h in result.hits]
        out(json.dumps(records, ensure_ascii=False, indent=2))
        return
    out(render(result, query, elapsed_ms))


COMMANDS = (find,)
