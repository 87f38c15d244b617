#!/usr/bin/env python3
"""List the layout's smells: long modules and long lines. A smell is a place to look for a real
seam, never a number to get under (docs/design.md §3)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ctxlog", "bench", "tasks", "strategies", "analysis", "hydra_plugins")
LONG_MODULE_LINES = 300
LONG_LINE_CHARS = 110


def main() -> int:
    long_modules, long_lines = [], 0
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            lines = path.read_text().splitlines()
            if len(lines) > LONG_MODULE_LINES:
                long_modules.append((len(lines), path.relative_to(ROOT)))
            long_lines += sum(len(line) > LONG_LINE_CHARS for line in lines)
    for n, path in sorted(long_modules, reverse=True):
        print(f"{n:5d} lines  {path}")
    print(
        f"{len(long_modules)} modules past {LONG_MODULE_LINES} lines; {long_lines} lines past {LONG_LINE_CHARS} characters"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
