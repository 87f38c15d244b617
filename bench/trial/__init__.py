"""One trial: the runner (resume, play, record), the agent loop, the step machinery, the
agent's tools and the watchdog."""
