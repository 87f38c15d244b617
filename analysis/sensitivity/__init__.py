"""Sensitivity: which conclusions survive the sim's assumptions, point by point of a
sensitivity study (`survive.py`; also a section of that study's report).

    python -m analysis.sensitivity STUDY [-o table.md]

Stands on `load`, `stats` and `settings`.
"""
