"""Power: exact McNemar power, sample size and MDE, design effect and signed-rank sizing
(`sizing.py`); the seed-level sign flip's power by simulation (`seeds.py`); the discordance psi
both ways (`psi.py`); one comparison's discordance, ICC and effective pairs (`pilot.py`).

    python -m analysis.power --pilot demo --reps 2 --seeds 30   (docs/power.md)

Ground floor: imports no other room. The command (`__main__.py`) reads a pilot study's rates
through `measures`: a room's command is imported by no module, so it may stand on any floor.
"""
