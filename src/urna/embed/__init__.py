"""Embedding models: the interface, the backends (transformer, static), the registry of
names, model identity (model_hash), the model gate and the embedding cache."""
