"""`make bench`: what the harness itself costs, measured."""
