"""Embedding models: identity (model_hash) and, later, the backends that embed text."""
