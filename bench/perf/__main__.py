"""`python -m bench.perf` (`make bench`): the harness's own overheads (see bench/perf/benchmark.py)."""

from bench.perf.benchmark import main

raise SystemExit(main())
