"""Core utilities: errors and codes, quantities, YAML, templates, words for people."""
