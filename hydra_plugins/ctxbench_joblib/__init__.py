"""The ctxbench joblib launcher (conf/hydra/launcher/ctxbench_joblib.yaml): Hydra's joblib
launcher with the per-job work a worker repeats for nothing done once per worker."""
