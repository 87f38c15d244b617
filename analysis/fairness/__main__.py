"""``python -m analysis.fairness``: is the comparison fair? One study (and optionally the same
cells run before a change), printed as plain tables:

  1. success per arm and strategy and its difference from the reference, each strategy with
     the channels its trials had on (analysis.fairness.channels), the "before" study beside it,
     both cut to the (family, seed, rep) they share;
  2. each strategy against the reference: difference, psi as observed, and psi both ways
     (analysis.power.psi), with the pilot's draws named and a warning for shared ones;
  3. per-family differences and Cochran's Q across families (analysis.fairness.families);
  4. the variance decomposition of success, with the seed ICC over reps.

    python -m analysis.fairness --study after --before before tracking.uri=sqlite:///results/mlflow.db
"""

from __future__ import annotations

import argparse
import sys

import pandas as pd

from analysis.fairness import channels, families
from analysis.measures import tables
from analysis.power import psi


def _load(study: str, uri: str) -> pd.DataFrame:
    from analysis.load import load_runs

    return load_runs(uri, "ctxbench", study, curves=False).trials


KEYS = ["task_family", "task_seed", "rep"]


def headline(after: pd.DataFrame, before: pd.DataFrame | None, reference: str = "raw") -> pd.DataFrame:
    """Success per (arm, strategy) and its difference from the reference, with the channels
    each side had on. With a before study, both sides are cut to the tasks and reps they
    share, so the two columns are the same seeds, not two samples of different size."""

    def rates(t: pd.DataFrame, tag: str) -> pd.DataFrame:
        t = t.assign(channels=t.apply(channels.label, axis=1))
        g = t.groupby(["arm", "strategy"]).agg(
            **{
                f"n {tag}": ("success", "size"),
                f"rate {tag}": ("success", "mean"),
                f"channels {tag}": ("channels", lambda c: " ".join(sorted(set(c)))),
            }
        )
        g = g.reset_index()
        ref = g.loc[g["strategy"] == reference].set_index("arm")[f"rate {tag}"]
        g[f"vs {reference} {tag}"] = g[f"rate {tag}"] - g["arm"].map(ref)
        return g

    if before is None:
        return rates(after, "after")
    keys = set(map(tuple, after[KEYS].drop_duplicates().to_numpy())) & set(
        map(tuple, before[KEYS].to_numpy())
    )

    def same(t: pd.DataFrame) -> pd.DataFrame:
        return t[t[KEYS].apply(tuple, axis=1).isin(keys)]

    return rates(same(before), "before").merge(
        rates(same(after), "after"), on=["arm", "strategy"], how="outer"
    )


def main(argv: list[str] | None = None, out=None) -> int:
    out = out or sys.stdout
    ap = argparse.ArgumentParser(prog="python -m analysis.fairness", description=__doc__.split("\n\n")[0])
    ap.add_argument("--study", action="append", required=True, help="a study to read (repeatable: its reps)")
    ap.add_argument("--before")
    ap.add_argument("--reference", default="raw")
    ap.add_argument("--before-uri", help="tracking uri of the before study (default: the same)")
    ap.add_argument("uri", nargs="?", default="tracking.uri=sqlite:///results/mlflow.db")
    a = ap.parse_args(argv)
    uri = a.uri.split("=", 1)[1]
    after = pd.concat([_load(s, uri) for s in a.study], ignore_index=True)
    before = _load(a.before, a.before_uri or uri) if a.before else None
    if after.empty:
        print(f"analysis.fairness: studies {a.study} have no finished trials at {uri}", file=sys.stderr)
        return 2
    fmt = {"float_format": lambda x: f"{x:.3f}", "index": False}
    print(
        f"1. success per arm and strategy ({len(after)} trials after"
        + (f", {len(before)} before; both cut to the tasks and reps they share" if before is not None else "")
        + f"), each against {a.reference}, channels beside each",
        file=out,
    )
    print(headline(after, before, a.reference).to_string(**fmt), file=out)
    vs = tables.success_vs_reference(after, a.reference)
    mode = psi.draws(after)
    print(f"\n2. against {a.reference}: psi observed and both ways (this study's draws: {mode})", file=out)
    print(psi.table(vs, mode).to_string(**fmt), file=out)
    if mode != "independent":
        print(psi.WARNING, file=out)
    fam = families.per_family(after, a.reference)
    print("\n3. per family, and heterogeneity across families (Cochran's Q)", file=out)
    print(families.heterogeneity(fam).to_string(**fmt), file=out)
    v = families.variance(after)
    print(
        f"\n4. variance of success (linear probability model, n={v.attrs['n']}, balanced={v.attrs['balanced']}, "
        f"reps={v.attrs['reps']}, seed ICC over reps {v.attrs['seed_icc']:.2f})",
        file=out,
    )
    print(v.to_string(**fmt), file=out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
