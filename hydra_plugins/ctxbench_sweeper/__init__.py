"""The ctxbench sweeper plugin (conf/hydra/sweeper/ctxbench.yaml): Hydra's basic sweeper whose
jobs are composed by bench.accel.compose.SweepLoader, here and in the launcher's workers."""
