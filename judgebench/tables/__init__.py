"""Scores tables: how they are described (columns, directions, scales, failed cells), read,
written and checked (destinations)."""
