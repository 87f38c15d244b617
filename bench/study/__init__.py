"""Studies: every Hydra multirun is one study (docs/studies.md, docs/scaling.md). The callback
(name, plan, progress, parent run, orphan sweep) is `bench.study.callback.StudyCallback`; the
plan's hashing is bench.study.plan; `python -m bench.study` is the command line."""
