"""The model proxy: an external agent's only way to a model (docs/agents.md)."""
