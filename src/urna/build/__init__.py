"""Building .urna files: ``write`` (urna.build: chunks and vectors to a verified file) and the
document build (discover -> load -> chunk -> embed, cached -> write -> verify)."""
