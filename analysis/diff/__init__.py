"""Diff: trials read from their event logs and compared. One trial's turns and rebuilt
contexts (`trajectory.py`); within-cell tree mismatch and the cross-arm divergence turn
(`mismatch.py`); the side-by-side page (`html.py`, `sections.py`); its timing (`bench.py`).

    python -m analysis.diff RUN_ID [RUN_ID_B | --rep-twin] [-o page.html]   (docs/diff.md)
    python -m analysis.diff.pagecost                                             (make bench)

Stands on `load` and `settings`.
"""
