"""One example per verb, shown at the end of its ``--help``, and the groups ``urna --help``
lists the verbs in. Kept in one table so a verb without an example fails a test
(``tests/test_docs.py``), and the CLI reference (``scripts/reference.py``) shows them."""

from __future__ import annotations

GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Search",
        (
            "find",
            "ask",
            "retrieve",
            "search-text",
            "search",
            "search-ann",
            "search-graph",
            "search-space",
        ),
    ),
    ("Inspect", ("cite", "stats", "inspect", "validate", "list")),
    ("Build and maintain", ("build", "compact", "history", "prune")),
    ("Serve", ("serve", "mcp")),
    ("Measure", ("eval", "benchmark")),
)

EXAMPLES: dict[str, str] = {
    "find": 'urna find -l guide "how do I check a citation against its source" -k 3',
    "ask": 'urna ask notes.urna "how do I rotate the keys?" -k 2',
    "retrieve": 'urna retrieve notes.urna "key rotation" -k 5 --format jsonl',
    "search-text": 'urna search-text notes.urna "key rotation" --mode text --source "ops/*"',
    "search": 'urna search notes.urna "$(cat query.json)" -k 10',
    "search-ann": 'urna search-ann notes.urna "$(cat query.json)" -k 10 --ef 200',
    "search-graph": 'urna search-graph notes.urna "$(cat query.json)" -k 10 --hops 1',
    "search-space": 'urna search-space notes.urna "$(cat query.json)" --space titles',
    "cite": "urna cite notes.urna urna://sha256:.../sha256:... --verify-source",
    "stats": "urna stats notes.urna",
    "inspect": "urna inspect notes.urna --json",
    "validate": "urna validate notes.urna",
    "list": "urna list --json",
    "build": "urna build docs/ -o notes.urna --exclude 'drafts/**'",
    "compact": "urna compact notes/",
    "history": "urna history notes/ --json",
    "prune": "urna prune notes/ --keep 5",
    "serve": "urna serve notes.urna --port 8765",
    "mcp": "urna mcp -l guide",
    "eval": "urna eval ../shared/data/scifact --model minilm",
    "benchmark": "urna benchmark notes.urna --queries 200",
}
