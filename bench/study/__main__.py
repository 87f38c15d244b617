"""`python -m bench.study`: remove orphaned containers, or count a study's trials by status.

python -m bench.study sweep            # remove containers whose harness process is dead
python -m bench.study status grid      # counts per status and against the plan, from MLflow
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator

from bench.tracking.study_records import status


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    logging.getLogger("alembic").setLevel(logging.WARNING)
    yield


def main(argv: list[str] | None = None) -> int:
    import argparse

    from bench.config import compose, load

    p = argparse.ArgumentParser(prog="python -m bench.study", description=(__doc__ or "").split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    sw = sub.add_parser("sweep", help="remove containers whose harness process is dead")
    sw.add_argument(
        "--all",
        action="store_true",
        help="remove EVERY ctxbench container, also those of studies running now",
    )
    st = sub.add_parser(
        "status", help="per-status counts of a study's trials, and planned / finished / excluded / missing"
    )
    st.add_argument("study")
    st.add_argument("overrides", nargs="*", help="config overrides, e.g. tracking.uri=http://host:5000")
    a = p.parse_args(argv)
    if a.cmd == "sweep":
        from bench.sandbox import sweep

        print(f"removed {sweep(orphans_only=not a.all)} container(s)")
        return 0
    with _quiet():
        tcfg = load(compose(list(a.overrides)))
        print(json.dumps(status(a.study, tcfg.tracking.uri, tcfg.tracking.experiment), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
