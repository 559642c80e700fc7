"""The document build: discover -> load -> chunk -> embed (cached) -> write -> verify."""
