"""A document's stored metadata: what its format says (``ingest/metadata.py``), then the
spec's ``[metadata]`` rules, then the built-in ``format``.

Rules, applied in this order: ``rename`` (a table ``old = "new"``), ``drop`` (a list of
names), then each ``[[metadata.set]]`` entry in spec order (``path``: a pattern as
``--source`` reads it, ``fields``: the values to set on every document it keeps; a later entry
wins). The built-ins ``source``, ``section`` and ``page`` come from the chunk itself at query
time and ``format`` (markdown, text, html, pdf, docx, jsonl, csv) is set here: a document
field with one of those names is shadowed (rename it to keep it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from urna.errors import BuildError, QueryError
from urna.format.fields import MAX_FIELD_NAME, Value
from urna.ingest.document import Document
from urna.ingest.globs import PathGlob
from urna.ingest.metadata import typed

BUILT_IN = ("source", "section", "page", "format")
RULE_KEYS = ("set", "rename", "drop")


@dataclass(frozen=True)
class FieldRules:
    rename: tuple[tuple[str, str], ...] = ()
    drop: tuple[str, ...] = ()
    set: tuple[tuple[PathGlob, tuple[tuple[str, Value], ...]], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """What the build recipe records of the rules."""
        return {
            "rename": [list(r) for r in self.rename],
            "drop": list(self.drop),
            "set": [[g.pattern, [[k, v] for k, v in fields]] for g, fields in self.set],
        }

    def apply(self, doc: Document) -> dict[str, Value]:
        fields = dict(doc.metadata)
        for old, new in self.rename:
            if old in fields:
                fields[new] = fields.pop(old)
        for name in self.drop:
            fields.pop(name, None)
        for glob, values in self.set:
            if glob.keeps(doc.source_uri):
                fields.update(values)
        for name in BUILT_IN:
            fields.pop(name, None)
        fields["format"] = doc.kind
        return fields


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_FIELD_NAME:
        raise BuildError(f"spec: {where} must be a field name of 1 to {MAX_FIELD_NAME} characters")
    return value


def parse_rules(table: dict[str, Any]) -> FieldRules:
    """The rules of a spec's ``[metadata]`` table (its other keys describe the file)."""
    rename_raw = table.get("rename", {})
    if not isinstance(rename_raw, dict):
        raise BuildError('spec: metadata.rename must be a table of old = "new"')
    rename = tuple(
        (_name(k, "metadata.rename key"), _name(v, f"metadata.rename.{k}"))
        for k, v in rename_raw.items()
    )
    drop_raw = table.get("drop", [])
    if not isinstance(drop_raw, list):
        raise BuildError("spec: metadata.drop must be a list of field names")
    drop = tuple(_name(v, "metadata.drop entry") for v in drop_raw)
    set_raw = table.get("set", [])
    if not isinstance(set_raw, list):
        raise BuildError("spec: metadata.set must be an array of tables ([[metadata.set]])")
    entries = []
    for i, entry in enumerate(set_raw):
        where = f"metadata.set[{i}]"
        if not isinstance(entry, dict) or set(entry) - {"path", "fields"}:
            raise BuildError(f"spec: {where} takes path and fields")
        try:
            glob = PathGlob(entry.get("path", ""))
        except QueryError as exc:
            raise BuildError(f"spec: {where}.path: {exc}") from None
        fields_raw = entry.get("fields")
        if not isinstance(fields_raw, dict) or not fields_raw:
            raise BuildError(f"spec: {where}.fields must be a table of values")
        for key in fields_raw:
            _name(key, f"{where}.fields key")
        values = typed(fields_raw)
        if len(values) != len(fields_raw):
            raise BuildError(f"spec: {where}.fields holds an empty value")
        entries.append((glob, tuple(sorted(values.items()))))
    return FieldRules(rename, drop, tuple(entries))
