"""External agents as players of a trial (docs/agents.md): their description (`spec`), their
install once per machine into a cache outside the repository (`install`), and the players."""
