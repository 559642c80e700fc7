"""Optional indexes stored inside a .urna file: BM25 (0x08)."""
