"""Searching an open .urna file: the ``Corpus`` facade, vector and text paths, fusion,
filters, hits and their one wire shape, citations."""
