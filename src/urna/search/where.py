"""Where-filters on metadata, in the syntax Chroma's users write: ``{"year": {"$gte": 2020}}``.

A filter is an object. Each key is a field with a condition, or ``$and`` / ``$or`` (a
non-empty list of filters) or ``$not`` (one filter); several keys in one object must all
hold. A condition is a bare value (meaning ``$eq``) or an object of operators, all of which
must hold: ``$eq $ne $gt $gte $lt $lte`` (one value), ``$in $nin`` (a non-empty list),
``$contains`` (a string a list field holds), ``$exists`` (true or false).

Semantics, as MongoDB's: a comparison holds only where the chunk has the field with a value
of a fitting type (numbers with numbers, integer and float alike; strings with strings; dates
with dates; booleans with booleans); ``$ne`` and ``$nin`` are the negations of ``$eq`` and
``$in``, so they keep chunks that lack the field, and ``$not`` keeps every chunk its filter
drops. A string compared with a date field is read as an ISO 8601 date. The filter is checked
against the fields the corpus holds before anything runs (``check``): a field no chunk has,
or an operator that fits none of the field's types, is one ``QueryError`` naming the known
fields. Parsing and evaluation are written here because no library evaluates this syntax
over numpy columns; the grammar is small.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as attribute
from typing import Any

from urna.errors import QueryError
from urna.format.fields import Date
from urna.ingest.metadata import iso_date

COMPARE = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
LISTS = ("$in", "$nin")
OPERATORS = (*COMPARE, *LISTS, "$contains", "$exists")
MAX_DEPTH = 32
MAX_NODES = 1000
MAX_VALUES = 10_000  # the values of every $in and $nin list together
MAX_JSON = 100_000

Scalar = str | int | float | bool


@dataclass(frozen=True)
class Leaf:
    field: str
    op: str
    value: Any  # a scalar, a tuple of scalars ($in, $nin), or a bool ($exists)
    # $in and $nin: the values as membership keys (``_key``), so a value is tested in one
    # hash look-up, however long the list
    keys: frozenset[tuple[str, Any]] = attribute(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Group:
    op: str  # $and | $or
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Negation:
    part: Node


Node = Leaf | Group | Negation


def parse_where(value: str | Mapping[str, Any] | None) -> Node | None:
    """A filter from its JSON text or its decoded object; None for no filter."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value.strip():
            return None
        if len(value) > MAX_JSON:
            raise QueryError(f"where filter of {len(value)} characters, at most {MAX_JSON}")
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError) as exc:
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise QueryError(
                f"invalid where filter: {detail}; a filter is JSON, "
                'e.g. {"year": {"$gte": 2020}}'
            ) from None
    budget = [MAX_NODES, MAX_VALUES]
    node = _node(value, 0, budget)
    return node


def _bad(message: str) -> QueryError:
    return QueryError(f"invalid where filter: {message}")


def _node(value: Any, depth: int, budget: list[int]) -> Node:
    if depth > MAX_DEPTH:
        raise _bad(f"nested more than {MAX_DEPTH} deep")
    budget[0] -= 1
    if budget[0] < 0:
        raise _bad(f"more than {MAX_NODES} conditions")
    if not isinstance(value, Mapping) or not value:
        raise _bad(f"expected a non-empty object, got {_kind(value)}")
    parts: list[Node] = []
    for key, item in value.items():
        if key in ("$and", "$or"):
            if not isinstance(item, list) or not item:
                raise _bad(f"{key} takes a non-empty list of filters")
            parts.append(Group(key, tuple(_node(v, depth + 1, budget) for v in item)))
        elif key == "$not":
            parts.append(Negation(_node(item, depth + 1, budget)))
        elif not isinstance(key, str) or not key or key.startswith("$"):
            raise _bad(f"unknown operator {key!r} (a field name cannot start with $)")
        else:
            parts.extend(_condition(key, item, budget))
    return parts[0] if len(parts) == 1 else Group("$and", tuple(parts))


def _condition(name: str, item: Any, budget: list[int]) -> list[Node]:
    if not isinstance(item, Mapping):
        return [Leaf(name, "$eq", _scalar(name, "$eq", item))]
    if not item:
        raise _bad(f"field {name!r} has an empty condition")
    out: list[Node] = []
    for op, operand in item.items():
        if op in COMPARE:
            out.append(Leaf(name, op, _scalar(name, op, operand)))
        elif op in LISTS:
            if not isinstance(operand, list) or not operand:
                raise _bad(f"{op} on {name!r} takes a non-empty list of values")
            budget[1] -= len(operand)
            if budget[1] < 0:
                raise _bad(f"more than {MAX_VALUES} values in its $in and $nin lists")
            values = tuple(_scalar(name, op, v) for v in operand)
            keys = frozenset(k for v in values for k in _wanted_keys(v))
            out.append(Leaf(name, op, values, keys))
        elif op == "$contains":
            if not isinstance(operand, str):
                raise _bad(f"$contains on {name!r} takes a string, got {_kind(operand)}")
            out.append(Leaf(name, op, operand))
        elif op == "$exists":
            if not isinstance(operand, bool):
                raise _bad(f"$exists on {name!r} takes true or false, got {_kind(operand)}")
            out.append(Leaf(name, op, operand))
        else:
            raise _bad(f"unknown operator {op!r} on {name!r} (known: {', '.join(OPERATORS)})")
    return out


def _scalar(name: str, op: str, value: Any) -> Scalar:
    if isinstance(value, bool | str):
        return value
    if isinstance(value, int | float) and not (
        isinstance(value, float) and not math.isfinite(value)
    ):
        return value
    raise _bad(f"{op} on {name!r} takes a string, number or boolean, got {_kind(value)}")


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "an object"
    return names.get(type(value), "a number" if isinstance(value, int | float) else "a value")


# --- checking against the fields a corpus holds ---------------------------------------------

Schema = Mapping[str, Mapping[str, int]]  # field -> {type name: chunks holding it}


def leaves(node: Node) -> list[Leaf]:
    if isinstance(node, Leaf):
        return [node]
    if isinstance(node, Negation):
        return leaves(node.part)
    return [leaf for part in node.parts for leaf in leaves(part)]


def fits(leaf: Leaf) -> set[str]:
    """The field types this condition can hold on."""
    if leaf.op == "$exists":
        return {"string", "integer", "float", "boolean", "date", "list"}
    if leaf.op == "$contains":
        return {"list"}
    values = leaf.value if leaf.op in LISTS else (leaf.value,)
    ordered = leaf.op in ("$gt", "$gte", "$lt", "$lte")
    out: set[str] = set()
    for v in values:
        if isinstance(v, bool):
            out |= set() if ordered else {"boolean"}
        elif isinstance(v, int | float):
            out |= {"integer", "float"}
        elif iso_date(v) is not None:
            out |= {"date"} if ordered else {"date", "string"}
        else:
            out |= set() if ordered else {"string"}
    return out


def check(node: Node, schema: Schema) -> None:
    """Refuse a filter on a field no chunk has, or with an operator no type of it fits."""
    known = ", ".join(sorted(schema)) or "(none)"
    for leaf in leaves(node):
        types = schema.get(leaf.field)
        if types is None:
            raise QueryError(f"unknown field {leaf.field!r} in the where filter; known: {known}")
        held = set(types)
        if not held & fits(leaf):
            shown = " or ".join(sorted(held))
            hint = " (use $contains for a list)" if held == {"list"} else ""
            raise QueryError(
                f"{leaf.op} {json.dumps(_plain(leaf.value))} does not fit field "
                f"{leaf.field!r}, which holds {shown}{hint}"
            )


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# --- one value against one condition --------------------------------------------------------


def holds(leaf: Leaf, present: bool, value: Any) -> bool:
    """Whether a chunk with this field value (``present`` False: no such field) passes."""
    op = leaf.op
    if op == "$exists":
        return present == leaf.value
    if op == "$ne":
        return not (present and _equal(value, leaf.value))
    if op == "$nin":
        return not (present and _stored_key(value) in leaf.keys)
    if not present:
        return False
    if op == "$glob":  # --source (internal: not an operator a filter can name)
        return bool(leaf.value.keeps(value))
    if op == "$prefix":  # --section
        return isinstance(value, str) and value.startswith(leaf.value)
    if op == "$eq":
        return _equal(value, leaf.value)
    if op == "$in":
        return _stored_key(value) in leaf.keys
    if op == "$contains":
        return isinstance(value, list) and leaf.value in value
    return _ordered(op, value, leaf.value)


def _wanted_keys(wanted: Scalar) -> list[tuple[str, Any]]:
    """The keys a stored value equal to ``wanted`` (as ``_equal`` reads it) has."""
    if isinstance(wanted, bool):
        return [("b", wanted)]
    if isinstance(wanted, int | float):
        return [("n", wanted)]  # 1 and 1.0 are one key: equal numbers hash alike
    found = iso_date(wanted)
    return [("s", wanted)] if found is None else [("s", wanted), ("d", str(found))]


def _stored_key(stored: Any) -> tuple[str, Any] | None:
    if isinstance(stored, bool):
        return ("b", stored)
    if isinstance(stored, int | float):
        return ("n", stored)
    if isinstance(stored, Date):
        return ("d", str(stored))
    if isinstance(stored, str):
        return ("s", stored)
    return None  # a list is tested with $contains


def _equal(stored: Any, wanted: Scalar) -> bool:
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored == wanted
    if isinstance(stored, int | float):
        return isinstance(wanted, int | float) and stored == wanted
    if isinstance(stored, Date):
        return isinstance(wanted, str) and iso_date(wanted) == stored
    if isinstance(stored, str):
        return isinstance(wanted, str) and stored == wanted
    return False  # a list is tested with $contains


def _ordered(op: str, stored: Any, wanted: Scalar) -> bool:
    if isinstance(stored, bool) or isinstance(wanted, bool):
        return False
    a: Any
    b: Any
    if isinstance(stored, int | float) and isinstance(wanted, int | float):
        a, b = stored, wanted
    elif isinstance(stored, Date) and isinstance(wanted, str):
        found = iso_date(wanted)
        if found is None:
            return False
        a, b = str(stored), str(found)
    else:
        return False
    if op == "$gt":
        return bool(a > b)
    if op == "$gte":
        return bool(a >= b)
    if op == "$lt":
        return bool(a < b)
    return bool(a <= b)
