"""What a .urna file indexes and how each index scores: exact (the matrix), HNSW (0x07),
BM25 (0x08), the chunk graph (0x0C). Each index loads itself from an open container."""
