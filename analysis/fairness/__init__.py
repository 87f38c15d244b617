"""Fairness: what each strategy showed beyond the transcript (`channels.py`), the share of a
difference that goes when one channel is off (`attribution.py`), per-family effects and the
variance split (`families.py`) (docs/instrument.md).

    python -m analysis.fairness --study after [--before before]
    python -m analysis.fairness.attribution --study attribution

Stands on `load`, `power` and `settings`; its command also on `measures`.
"""
