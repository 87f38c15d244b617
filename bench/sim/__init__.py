"""The simulated model (`model=sim`, `model=oracle`): perception, recall, action, summary,
usage. Registered as a provider in `bench.providers`."""
