"""The query language: what a search box means by quotes, ``-``, ``+`` and ``field:``.

    "a phrase"        the chunk holds these words in this order
    +word  +"phrase"  the chunk holds it
    -word  -"phrase"  the chunk does not hold it
    field:value       the field equals value (a number, true/false, or text)
    field:>=2020      also >, <, <=
    field:[a TO b]    a <= field <= b

Everything else is text, searched as before, bit for bit: a query without syntax is passed
on unchanged. Ordinary text never turns into syntax by accident: a quote is a phrase only
when it closes (``what's "the`` keeps its quote as text), ``-`` and ``+`` only where they
start a word and a letter or a quote follows (``e-mail``, ``C++``, ``3-4``, ``-5``, a lone
``-`` are text), and ``name:value`` only where ``name`` is two or more characters of a
field name and the value does not start with ``/`` or ``\\`` (``http://...``, ``12:30``,
``C:\\temp`` are text). A ``name:`` that looks like a field but names none the corpus holds
is refused with the fields it does hold. The words of phrases and of ``+`` terms are
searched too (by meaning and by BM25); excluded words and fields are not.

Written by hand: the grammar is seven forms over whitespace-separated words, and a parser
library (lark, pyparsing) would still need these rules for what is *not* syntax, which are
most of the work and the part a user notices.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from urna.errors import QueryError
from urna.index.tokenize import PER_DOCUMENT, Tokenizer, read_in
from urna.search.request import Query
from urna.search.where import Schema, parse_where
from urna.search.words import TextRule, document_tokenizer

_FIELD = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]+):(.+)$", re.DOTALL)
_RANGE = re.compile(r"^\[(.+?)\s+TO\s+(.+?)\]$", re.DOTALL)
_COMPARE = re.compile(r"^(>=|<=|>|<)(.+)$", re.DOTALL)
_OPS = {">=": "$gte", "<=": "$lte", ">": "$gt", "<": "$lt"}
MAX_TERMS = 64  # phrases, + and - terms and fields in one query


@dataclass(frozen=True)
class Parsed:
    """A query read: the text to search, the phrases and words a chunk must hold and must
    not hold (as the user wrote them), and a where-filter of its fields (None: none)."""

    text: str
    required: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    where: dict[str, Any] | None = None

    @property
    def syntax(self) -> bool:
        return bool(self.required or self.excluded or self.where)


def _pieces(text: str) -> list[str]:
    """Whitespace-separated words, a closed quote (and a ``field:[a TO b]`` range) kept as
    one piece with its spaces."""
    words = text.split()
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        opener = word.lstrip("+-")
        if opener.startswith('"') and not _closes(opener[1:]):
            j = next((j for j in range(i + 1, len(words)) if _closes(words[j])), None)
            if j is not None:
                out.append(" ".join(words[i : j + 1]))
                i = j + 1
                continue
        field = _FIELD.match(word)
        if field and field.group(2).startswith("[") and not word.endswith("]"):
            j = next((j for j in range(i + 1, len(words)) if words[j].endswith("]")), None)
            if j is not None:
                out.append(" ".join(words[i : j + 1]))
                i = j + 1
                continue
        out.append(word)
        i += 1
    return out


def _closes(word: str) -> bool:
    return word.endswith('"') and len(word) >= 1


def _quoted(piece: str) -> str | None:
    """The phrase inside a closed quote (None when ``piece`` is no quote)."""
    if len(piece) >= 3 and piece.startswith('"') and piece.endswith('"'):
        inner = piece[1:-1].strip()
        return inner if inner and '"' not in inner else None
    return None


def _signed(piece: str) -> tuple[str, str] | None:
    """(sign, what follows) for ``-x`` or ``+x`` where x starts with a letter or a quote."""
    if len(piece) >= 2 and piece[0] in "+-":
        rest = piece[1:]
        if rest[0].isalpha() or (rest[0] == '"' and _quoted(rest) is not None):
            return piece[0], rest
    return None


def _value(raw: str) -> Any:
    """A field value as the where-filter takes it: an integer, a number, a boolean or text
    (a quoted value is always text)."""
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return raw[1:-1]
    if raw in ("true", "false"):
        return raw == "true"
    for kind in (int, float):
        try:
            number = kind(raw)
        except ValueError:
            continue
        if kind is float and not (number == number and abs(number) != float("inf")):
            break  # nan and inf are text
        return number
    return raw


def _field(name: str, raw: str) -> dict[str, Any]:
    span = _RANGE.match(raw)
    if span:
        return {name: {"$gte": _value(span.group(1)), "$lte": _value(span.group(2))}}
    compare = _COMPARE.match(raw)
    if compare:
        return {name: {_OPS[compare.group(1)]: _value(compare.group(2))}}
    return {name: {"$eq": _value(raw)}}


def parse_query(text: str, fields: Collection[str]) -> Parsed:
    """Read ``text``; ``fields`` are the metadata fields the corpus holds. A query without
    syntax comes back with its text unchanged."""
    words: list[str] = []
    required: list[str] = []
    excluded: list[str] = []
    conditions: list[dict[str, Any]] = []
    found = False
    for piece in _pieces(text):
        signed = _signed(piece)
        phrase = _quoted(piece)
        field = _FIELD.match(piece) if signed is None and phrase is None else None
        if signed is not None:
            sign, rest = signed
            term = _quoted(rest) or rest
            (excluded if sign == "-" else required).append(term)
            if sign == "+":
                words.append(term)
            found = True
        elif phrase is not None and len(phrase.split()) > 1:
            required.append(phrase)
            words.append(phrase)
            found = True
        elif field is not None and not field.group(2).startswith(("/", "\\")):
            name, raw = field.group(1), field.group(2)
            if name not in fields:
                known = ", ".join(sorted(fields)) or "none"
                raise QueryError(
                    f"unknown field {name!r} in {piece!r} (this corpus's fields: {known}); "
                    f'quote it to search it as text: "{piece}"'
                )
            conditions.append(_field(name, raw))
            found = True
        else:
            words.append(phrase if phrase is not None else piece)
    if not found:
        return Parsed(text)
    if len(required) + len(excluded) + len(conditions) > MAX_TERMS:
        raise QueryError(f"a query takes at most {MAX_TERMS} phrases, +, - and field: terms")
    if not words:
        raise QueryError(
            "nothing to search for: the query only excludes or filters; add words to search "
            "for (a field alone is a --where filter)"
        )
    where = None
    if conditions:
        where = conditions[0] if len(conditions) == 1 else {"$and": conditions}
    return Parsed(" ".join(words), tuple(required), tuple(excluded), where)


def read_query(
    query: Query, schema: Schema, tokenizer: str | None, languages: tuple[str, ...] = ()
) -> tuple[Query, TextRule | None]:
    """A text query with its syntax read: its text to search, its where-filter with the
    query's fields added, and the phrases and words its chunks must and must not hold, as
    the file's BM25 tokenizer (``tokenizer``) reads them (under version 5, as each of the
    corpus's ``languages`` reads them). A query without syntax, or any other method, comes
    back as it is."""
    if query.method != "text" or not isinstance(query.text, str):
        return query, None
    parsed = parse_query(query.text, schema)
    if not parsed.syntax:
        return query, None
    rule = None
    if not (parsed.required or parsed.excluded):
        pass
    elif tokenizer == PER_DOCUMENT:
        rule = TextRule(
            readings=tuple((x, _rule(parsed, read_in(x))) for x in languages or ("en",))
        )
    else:
        rule = _rule(parsed, document_tokenizer(tokenizer))
        rule = rule if rule.required or rule.excluded else None
    where = _fields_where(parsed.where, schema)
    if where is not None and query.where not in (None, "", {}):
        given = parse_where(query.where)  # a bad --where says so as it always has
        assert given is not None
        where = {"$and": [_plain_where(query.where), where]}
    return replace(query, text=parsed.text, where=where or query.where), rule


def _rule(parsed: Parsed, read: Tokenizer) -> TextRule:
    """The phrases and words of ``parsed`` as ``read`` reads them. A term that reads as no
    word (``"they"``: only stop words, which the index does not hold) constrains nothing and
    is left out, as a search engine leaves a stop word out of a phrase; its words still
    count in the ranking as the query's text."""
    required: list[tuple[str, ...]] = []
    excluded: list[tuple[str, ...]] = []
    for group, into in ((parsed.required, required), (parsed.excluded, excluded)):
        for term in group:
            tokens = tuple(read(term))
            if tokens:
                into.append(tokens)
    return TextRule(tuple(required), tuple(excluded))


def _fields_where(where: dict[str, Any] | None, schema: Schema) -> dict[str, Any] | None:
    """``field:value`` on a list field asks whether the list holds the value."""
    if where is None:
        return None
    parts = where.get("$and", [where])
    out = []
    for part in parts:
        ((name, condition),) = part.items()
        if set(schema.get(name, {})) == {"list"} and "$eq" in condition:
            condition = {"$contains": condition["$eq"]}
        out.append({name: condition})
    return out[0] if len(out) == 1 else {"$and": out}


def _plain_where(given: str | Mapping[str, Any]) -> Any:
    return json.loads(given) if isinstance(given, str) else given
