"""The build options a collection's catalog records (``build``): what a compaction or an
update writes new files with. They are data to check and compare, never instructions: a
catalog names no code, network or path for urna to follow (``build/target.py`` resolves
only bundled model names, or the ones the user gives). ``validate`` and every writer check
them with ``check_build_options``; a catalog that records none (an older urna) has ``{}``.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from urna.errors import FormatError

KINDS: dict[str, tuple[type, ...]] = {
    "model": (str,),
    "max_tokens": (int,),
    "overlap_tokens": (int,),
    "preset": (str,),
    "dtype": (str, type(None)),
    "bm25": (bool, type(None)),
    "rerank_copy": (bool,),
    "compress": (bool,),
    "spaces": (list,),
    "metadata": (dict,),
    "source_root": (str,),
}
OPTIONAL: dict[str, tuple[type, ...]] = {
    "source_roots": (list,),  # where sources outside source_root lie (``BuildSpec.roots``)
}
PRESET_NAMES = ("exact", "compressed", "tiny", "hybrid")
DTYPE_NAMES = ("float32", "float16", "int8")


def check_build_options(options: Any) -> None:
    """Refuse recorded options that no build writes: a missing or unknown key, a value of
    another type, an unknown preset or dtype, a window out of range, a space that is not a
    [name, model] pair, an absolute source root."""

    def bad(what: str) -> FormatError:
        return FormatError(f"its build options are damaged: {what}", check=19, section="catalog")

    if options == {}:
        return
    if not isinstance(options, dict) or not set(KINDS) <= set(options) <= {*KINDS, *OPTIONAL}:
        raise bad(f"expected exactly the keys {', '.join(sorted(KINDS))} (and source_roots)")
    for key, kinds in {**KINDS, **OPTIONAL}.items():
        if key not in options:
            continue
        value = options[key]
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise bad(f"{key} is {value!r}")
    if options["preset"] not in PRESET_NAMES:
        raise bad(f"preset {options['preset']!r} is not one of {', '.join(PRESET_NAMES)}")
    if options["dtype"] not in (None, *DTYPE_NAMES):
        raise bad(f"dtype {options['dtype']!r} is not one of {', '.join(DTYPE_NAMES)}")
    tokens, overlap = options["max_tokens"], options["overlap_tokens"]
    if tokens < 8 or not 0 <= overlap < tokens // 2:
        raise bad(f"max_tokens {tokens} or overlap_tokens {overlap} out of range")
    for space in options["spaces"]:
        if not (
            isinstance(space, list) and len(space) == 2 and all(isinstance(x, str) for x in space)
        ):
            raise bad(f"a space is {space!r}, not a [name, model] pair")
    roots = [options["source_root"], *options.get("source_roots", [])]
    if any(not isinstance(r, str) or PurePosixPath(r).is_absolute() for r in roots):
        raise bad("source_root and source_roots must be paths relative to the collection")
