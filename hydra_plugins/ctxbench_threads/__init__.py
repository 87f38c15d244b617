"""The ctxbench threads launcher (conf/hydra/launcher/ctxbench_threads.yaml): many trials in
flight in one process, for studies that wait on a provider."""
