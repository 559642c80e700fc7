"""Adapters that let other frameworks call urna (each behind its own extra)."""
