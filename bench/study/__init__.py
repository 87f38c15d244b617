"""Studies: one Hydra multirun is one study (docs/scaling.md). The callback (progress, parent
run, orphan sweep) is `bench.study.callback.StudyCallback`; `python -m bench.study` is the
command line."""
