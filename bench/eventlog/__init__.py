"""The append-only, hash-chained event log of a trial, and `verify`, which rebuilds every
model-visible context from it."""
