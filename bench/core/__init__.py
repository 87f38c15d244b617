"""The ground floor: messages, usage and prices (`types`), token counting (`tokens`), the text
markers both the harness and the simulated model read (`render`), the tools the agent is
offered (`toolspecs`), the registry idiom (`registry`) and secret redaction (`redact`). It
imports nothing from the project but the task contract `tasks.spec` (ground floor too), so
`strategies` and `tasks` may lean on it (tests/test_layout.py)."""
