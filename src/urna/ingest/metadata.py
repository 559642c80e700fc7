"""What a document says about itself, as typed metadata values (``format/fields.py``).

Loaders hand over what their format carries: Markdown's YAML front matter (PyYAML, safe
loading only), a JSONL record's fields, a CSV row's columns, a PDF's or DOCX's document
properties. ``typed`` turns those into the six stored types: a YAML date or time becomes a
date (times in UTC), an ISO 8601 string from JSON or CSV becomes a date too, a list becomes a
list of strings, a nested object its compact JSON text; None, NaN and empty strings are left
out (a field a document does not have).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from urna.errors import BuildError
from urna.format.fields import MAX_FIELD_NAME, Date, Value

I64 = 1 << 63
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")
_INT = re.compile(r"[+-]?\d+")
FRONT_MATTER = re.compile(
    rb"\A(?:\xef\xbb\xbf)?---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S | re.M
)


def iso_date(text: str) -> Date | None:
    """``text`` as a date (``2020-01-31``) or a UTC time, or None when it is neither."""
    if not _ISO.fullmatch(text):
        return None
    try:
        if len(text) == 10:
            return Date(dt.date.fromisoformat(text).isoformat())
        return _time(dt.datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return None


def _time(value: dt.datetime) -> Date:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return Date(value.isoformat(timespec="seconds") + "Z")


def _item(value: Any) -> str | None:
    """One element of a list, as a string."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dt.datetime):
        return str(_time(value))
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if math.isfinite(value) else None
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def typed_value(value: Any, *, strings_as_dates: bool = False) -> Value | None:
    """One value in a stored type, or None for no value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if -I64 <= value < I64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.datetime):
        return _time(value)
    if isinstance(value, dt.date):
        return Date(value.isoformat())
    if isinstance(value, str):
        if not value.strip():
            return None
        found = iso_date(value.strip()) if strings_as_dates else None
        return found if found is not None else value
    if isinstance(value, list | tuple):
        items = [s for s in (_item(v) for v in value) if s is not None]
        return items
    return _item(value)


def typed(raw: Mapping[Any, Any], *, strings_as_dates: bool = False) -> dict[str, Value]:
    """A document's fields in stored types (names as strings; empty values left out)."""
    out: dict[str, Value] = {}
    for key, value in raw.items():
        name = str(key).strip()
        if not name or len(name) > MAX_FIELD_NAME:
            continue
        found = typed_value(value, strings_as_dates=strings_as_dates)
        if found is not None:
            out[name] = found
    return out


def front_matter(data: bytes, source_uri: str) -> tuple[int, dict[str, Value]]:
    """Where a Markdown file's YAML front matter ends (0: none) and its fields."""
    match = FRONT_MATTER.match(data)
    if match is None:
        return 0, {}
    import yaml

    try:
        loaded = yaml.load(match.group(1).decode("utf-8"), Loader=_loader())
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BuildError(f"{source_uri}: front matter is not valid YAML: {detail}") from None
    fields = typed(loaded) if isinstance(loaded, dict) else {}
    return match.end(), fields


def _loader() -> Any:
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def column_types(rows: Iterable[Mapping[str, str]], columns: Iterable[str]) -> dict[str, str]:
    """Each CSV column's type: integer, float, boolean or date when every non-empty cell
    parses as one, else string."""
    cells: dict[str, list[str]] = {c: [] for c in columns}
    for row in rows:
        for c in cells:
            value = row.get(c)
            if isinstance(value, str) and value.strip():
                cells[c].append(value.strip())
    return {c: _column_type(values) for c, values in cells.items()}


def _column_type(values: list[str]) -> str:
    if not values:
        return "string"
    if all(_INT.fullmatch(v) and -I64 <= int(v) < I64 for v in values):
        return "integer"
    if all(_is_float(v) for v in values):
        return "float"
    if all(v.lower() in ("true", "false") for v in values):
        return "boolean"
    if all(iso_date(v) is not None for v in values):
        return "date"
    return "string"


def _is_float(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def cell(value: str, kind: str) -> Value | None:
    """A CSV cell in its column's type."""
    text = value.strip()
    if not text:
        return None
    if kind == "integer":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "boolean":
        return text.lower() == "true"
    if kind == "date":
        return iso_date(text)
    return value
