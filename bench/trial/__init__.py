"""One trial: the runner (prepare, resume or skip, play) and its record, the agent loop, the
step machinery, certification and its in-sandbox launcher, the agent's tools and the watchdog.
How the agent is kept honest: docs/threat_model.md."""
