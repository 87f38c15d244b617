"""The event log's contract, on the ground floor: what the harness writes and the analysis reads.

`events` has one small frozen class per event kind, versioned; `reader` turns a log into its
events and its turns, each with the context the model saw rebuilt from the log; `statements`
is what a constraint statement is (read by the sim, the measures and the calibration alike).
Nothing here imports the rest of the project (docs/design.md §3, §6).
"""
