"""Retrieval quality on BEIR-layout test collections: loading, scoring, metrics."""
