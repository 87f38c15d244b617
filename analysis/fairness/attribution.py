"""The attribution table: for each headline comparison, the share of the difference that
disappears when one channel or mechanism is switched off.

A comparison is a strategy against the reference (raw) in one arm, on the same tasks and reps.
Its difference with everything on is D = rate(strategy) - rate(reference) under `none`; with
switch X off it is D_X, on the same pairs. The share that disappears is (D - D_X) / D: 1 means
the whole difference came through X, 0 none of it, negative that X was holding the strategy
back, above 1 that without X the sign turns. With D = 0 there is nothing to attribute (NaN).

A strategy's own channel (TREE, the drift note, harness-written invariants) exists only in the
strategies that have it: a strategy without the switch is, under it, what it is under `none`,
so its `none` trials stand for it (read, not rerun); `ran under it` names the sides that
really ran under the switch, and where neither did the share is 0 by construction, not a finding. Trials from several studies may be joined
(the `none` cells from a headline study, the switches from an ablation study): pairs are
matched on (model, family, seed, rep), not on the study. Shares are noisy with few pairs:
`n_pairs` is printed beside each, and the differences themselves are in the table.

One switch turns a channel ON against `none`: `harness_invariants` (today's default is
invariants_from=model, conf/ablation/harness_invariants.yaml). Its row reads the same way as
the others: `D (all on)` is the difference WITH the channel (the switch's trials), `D (off)`
the one without it (`none`), and the share gone is the part of the with-channel difference
that goes when the channel is taken away.

    python -m analysis.fairness.attribution --study after --study attribution [tracking.uri=...]
"""

from __future__ import annotations

import argparse
import math
import sys

import pandas as pd

from analysis.load import POINT

KEY = ("model", "task_family", "task_seed", "rep")
NONE = ("", "ablation=none")
# Which strategies have each channel switch (conf/ablation/<name>.yaml): the others stand in with `none`.
CHANNELS = {
    "tree": ("ledger",),
    "drift_note": ("ledger", "subagent"),
    "harness_invariants": ("ledger", "subagent"),
}
# Switches that turn a channel on (the default has it off): `none` is then the "off" side.
SWITCHED_ON = ("harness_invariants",)


def _switch(point: str) -> str:
    return "none" if point in NONE else point.removeprefix("ablation=")


def _rates(t: pd.DataFrame, strategy: str, arm: str, switch: str) -> pd.DataFrame:
    own = t[(t["strategy"] == strategy) & (t["arm"] == arm)]
    stand_in = switch in CHANNELS and strategy not in CHANNELS[switch]
    rows = own[own["switch"] == ("none" if stand_in else switch)]
    return rows.drop_duplicates(list(KEY)).set_index(list(KEY))["success"].astype(float)


def table(
    trials: pd.DataFrame,
    reference: str = "raw",
    strategies: tuple[str, ...] = ("ledger", "compaction"),
) -> pd.DataFrame:
    t = trials.assign(switch=trials[POINT].fillna("").astype(str).map(_switch))
    switches = [s for s in dict.fromkeys(t["switch"]) if s != "none"]
    ran = {
        s: pd.MultiIndex.from_frame(t.loc[t["switch"] == s, list(KEY)].drop_duplicates()) for s in switches
    }
    rows = []
    for arm in [a for a in ("baseline", "compaction", "drift", "drift_compaction") if a in set(t["arm"])]:
        for strategy in strategies:
            base = pd.concat(
                {"s": _rates(t, strategy, arm, "none"), "r": _rates(t, reference, arm, "none")}, axis=1
            ).dropna()
            for switch in switches:
                off = pd.concat(
                    {"s": _rates(t, strategy, arm, switch), "r": _rates(t, reference, arm, switch)}, axis=1
                ).dropna()
                both = base.add_suffix("_on").join(off.add_suffix("_off"), how="inner")
                both = both[both.index.isin(ran[switch])]  # only the tasks the switch was run on
                if both.empty:
                    continue
                d_on = float((both["s_on"] - both["r_on"]).mean())
                d_off = float((both["s_off"] - both["r_off"]).mean())
                if switch in SWITCHED_ON:
                    d_on, d_off = d_off, d_on
                has = [x for x in (strategy, reference) if switch not in CHANNELS or x in CHANNELS[switch]]
                rows.append(
                    {
                        "arm": arm,
                        "comparison": f"{strategy} - {reference}",
                        "switched off": switch,
                        "ran under it": " ".join(has) if has else "neither: 0 by construction",
                        "n_pairs": len(both),
                        "D (all on)": d_on,
                        "D (off)": d_off,
                        "share gone": (d_on - d_off) / d_on if d_on else math.nan,
                    }
                )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    from analysis.load import load_runs
    from analysis.settings import defaults

    ap = argparse.ArgumentParser(
        prog="python -m analysis.fairness.attribution", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--study", action="append", required=True, help="a study to read (repeatable)")
    ap.add_argument("--reference", default="raw")
    ap.add_argument("overrides", nargs="*", metavar="tracking.uri=...")
    a = ap.parse_args(argv)
    cfg = {k: v for k, v in defaults().items() if k.startswith("tracking.") and v}
    cfg.update(dict(o.split("=", 1) for o in a.overrides))
    frames = [
        load_runs(cfg["tracking.uri"], cfg.get("tracking.experiment", "ctxbench"), s, curves=False).trials
        for s in a.study
    ]
    out = table(pd.concat(frames, ignore_index=True), a.reference)
    if out.empty:
        print(
            "analysis.fairness.attribution: no pairs of a switch and `none` in these studies", file=sys.stderr
        )
        return 2
    print(out.to_string(index=False, float_format=lambda x: f"{x:+.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
