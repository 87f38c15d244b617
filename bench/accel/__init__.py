"""The annexes: what makes a study fast, kept off the reference path (docs/design.md §2, §3).

A trial with every switch off runs runner → player → strategy → provider → a plain sandbox
(`docker exec`, host git, the working-copy files) and imports nothing from here
(tests/bench/accel/test_reference_path.py). Each annex is on by its switch, all of them in
`experiment=grid`; none changes a trial's record or its config hash (`python -m
bench.perf.same_records` compares the two paths; docs/scaling.md says what each buys):

| annex | switch | modules |
|---|---|---|
| the harness's git, fast | `sandbox.fast_git` | fastgit (libgit, gittree, gitmemo, scratch) |
| the check cache | `sandbox.check_cache` | checkcache, pristine |
| sandbox reuse | `sandbox.reuse` | pool, pristine |
| tasks and their answers kept per process | `task.kept` | kept_tasks |
| jobs composed once | the sweeper and launchers `hydra_plugins/ctxbench_*` | compose |

They plug in where the reference path names them by string (workcopy.ANNEXES,
runner.ANNEXES, which hands kept_tasks to `tasks.keep_with`, the Hydra plugins), so nothing on
that path imports this package.
"""
