"""Measures: the comparisons, one tidy frame each, n beside every estimate (`tables.py`); the
appendix's measures per cell (`appendix.py`); the harness's token count against the
provider's (`token_check.py`). Stands on `load`, `stats` and `power`."""
