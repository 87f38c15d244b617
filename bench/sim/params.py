"""The simulated model's knobs, stated once: `SimModel` is `model=sim` (conf/model/sim.yaml keeps
its name; oracle.yaml and a calibration's sim_NAME.yaml extend it and state what they change),
`SimParams` its behaviour. Each knob has its default, bounds and a one-line doc here; why each
default is what it is (which published observation it models) is the comment above it.
Registered as `/knobs/model/sim` (hydra_plugins/ctxbench_knobs, bench/core/knobs.py).

Recall of a visible fact (bench/sim/recall.py):
  p = recall_recent                                    if just seen
  p = recall_max * rot(L) * (1 - dip(L) * bump(r))     otherwise
  rot(L)  = 1 - rot_max_drop * L^k / (L^k + rot_half_tokens^k),   k = rot_shape
  bump(r) = (4 r (1 - r))^middle_shape                 r = relative position, 0 at the ends
  dip(L)  = middle_dip * L / (L + middle_half_tokens)

Defaults keep the types the YAML gave them (64000, not 64000.0): the composed config, and so
the config hash, carries them as they were. A validated value is a float or an int as typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from bench.core import knobs
from bench.core.knobs import Knobs

Probability = Annotated[StrictFloat, Field(ge=0, le=1)]
NonNegative = Annotated[StrictFloat, Field(ge=0)]
Positive = Annotated[StrictFloat, Field(gt=0)]
Count = Annotated[knobs.Integer, Field(ge=0)]
PositiveCount = Annotated[knobs.Integer, Field(gt=0)]


def _p(default: float, doc: str) -> Any:
    return Field(default=default, description=doc)


class SimParams(Knobs):
    """`model.params`: how the simulated agent recalls, acts, explores, summarises and is billed."""

    # --- recall --------------------------------------------------------------------------------
    # Below 1: retrieval from context is imperfect even at the favoured ends (Liu et al. 2023,
    # "Lost in the Middle": multi-document QA never reaches the single-document accuracy).
    recall_max: Probability = _p(0.98, "recall at the best position of a short context")
    # Models quote text they have just read near-verbatim, and the end of the context is the
    # best-recalled position in Liu et al. 2023. 1.0 makes "re-read the file" a reliable fix.
    recall_recent: Probability = _p(
        1.0, "recall of what was just seen (the newest tool results, or the last recent_tokens)"
    )
    recent_tokens: Count = _p(1500, "size of that just-seen window at the end of the context, in tokens")
    # Context rot: recall falls as the whole context grows, even when the task does not change
    # (Chroma 2025 "Context Rot", 18 models degrade with input length; Hsieh et al. 2024 "RULER":
    # effective context is far shorter than the advertised window).
    rot_max_drop: Probability = _p(0.5, "most recall a very long context can lose")
    rot_half_tokens: Positive = _p(64000, "context length at which half of that is lost")
    rot_shape: NonNegative = _p(1.5, "steepness: >1 keeps short contexts nearly intact, then bites")
    # Lost in the middle, the U-shape: Liu et al. 2023, with 20 documents, GPT-3.5-Turbo's accuracy
    # falls by about 20 points, roughly a quarter to a third, when the answer moves from the first
    # position to the middle. The U is shallow in short contexts and deepens with more documents
    # (10 vs 20 vs 30 documents, i.e. about 2k-6k tokens).
    middle_dip: Probability = _p(0.3, "most recall lost in the exact middle (relative to the ends)")
    middle_shape: NonNegative = _p(1.0, "exponent of the U; >1 narrows the trough towards the exact middle")
    middle_half_tokens: Positive = _p(4000, "context length at which the dip is half of middle_dip")
    # --- action --------------------------------------------------------------------------------
    # The "competent engineer with amnesia" of the seed article (a compacted summary dropped the
    # reason for a variadic shim; the model deleted it): tidy-ups are code that looks dead in the
    # visible tree (tasks/<family>/oracle.py `cleanups`). A modelling assumption, not a measured
    # rate; 0 when a covering constraint is recalled (bench/sim/recall.py `protection`).
    p_tempt: Probability = _p(
        0.5, "chance a step inviting a tidy-up does it when no recalled constraint covers it"
    )
    # Restated in other words a constraint keeps the gist and loses the force (the seed article's
    # summary "retained the shape of the task"). A modelling assumption.
    p_paraphrase: Probability = _p(
        0.5,
        "how much a summary's paraphrase of a constraint binds, relative to "
        "a stated invariant line (1: as much)",
    )
    # Working from an imperfect memory of a file whose newest visible copy is not recalled: the
    # previous visible version (version confusion in long transcripts holding several copies).
    p_stale_replace_fail: Probability = _p(
        0.5, "chance a search/replace is computed from a stale copy (it then fails at the tool: ERROR)"
    )
    p_stale_clobber: Probability = _p(
        0.5, "chance a whole-file write is computed from a stale copy (it clobbers the newer lines)"
    )
    # Of the order of Aider's code-editing benchmark, where frontier models fail a sizeable share
    # of exercises on the first try (bench/sim/competence.py). Calibratable from a real model's
    # logs as the share of checked edit batches that fail with no trap, stale copy or drift
    # involved; not measured by any module yet (it needs the task's ground truth).
    p_edit_error: Probability = _p(
        0.1, "chance an edit batch leaves out the step's edits to one of its files"
    )
    # --- exploration (bench/sim/explore.py) ----------------------------------------------------
    # A behaviour, one rate each, fixed before any run; calibratable from a real model's event logs
    # (analysis/calibrate/explore_rates.py measures the observable shares: match the sim's shares to
    # the real model's, do not copy them). Coding agents look at git at the start of work and
    # re-read files they have not seen lately some of the time, not always.
    p_look_history: Probability = _p(
        0.3, "at a step's first turn: git status --short + git log --stat -n history_depth"
    )
    history_depth: PositiveCount = _p(5, "commits that look shows")
    p_check_changes: Probability = _p(
        0.5, "at a step's first turn, having seen a HEAD before: git log --stat <that HEAD>..HEAD"
    )
    p_reread_before_edit: Probability = _p(
        0.5, "per file to edit whose newest copy in view predates the step: re-read it first"
    )
    max_attempts: PositiveCount = _p(3, "failed checks on one step before it gives up")
    max_edit_retries: Count = _p(
        2, "redos of an edit batch after an ERROR (and re-read), per attempt; then it submits"
    )
    max_failure_reads: Count = _p(4, "files named in a failure's output that it re-reads")
    # --- summariser: chance each fact survives a compaction, by kind ---------------------------
    # Summaries keep the task's shape and drop detail stated in passing (the seed article:
    # "retained the shape of the task ... and dropped a sentence about a variadic parameter").
    # File contents never survive (a summary is not a copy of the repository).
    retain_plan: Probability = _p(0.95, "plan lines [step:ID] title")
    retain_task_invariant: Probability = _p(0.9, "invariants stated in the task message")
    retain_invariant: Probability = _p(
        0.3, "invariant lines stated in passing (a step's established invariants)"
    )
    retain_fact: Probability = _p(0.5, "other constraint sentences (hand-off notes, step instructions)")
    retain_check: Probability = _p(0.8, "check verdict lines")
    # The compaction prompt asks for verbatim copies (strategies/_common.py); a modelling
    # assumption that models mostly, not always, comply.
    p_verbatim: Probability = _p(
        0.7,
        "chance a kept invariant line is copied verbatim, else restated (then it binds with p_paraphrase)",
    )
    # --- prefix cache (per trial) --------------------------------------------------------------
    # Only a byte-identical prefix of an earlier request is read from cache. OpenAI caches prompts
    # of >= 1024 tokens in 128-token increments; Anthropic's minimum cacheable prompt is 1024
    # tokens on Sonnet; both expire after ~5 idle minutes.
    cache_block_tokens: PositiveCount = _p(128, "cached prefixes count in whole blocks of this many tokens")
    cache_min_tokens: Count = _p(1024, "a prefix shorter than this is never cached")
    cache_ttl_s: NonNegative = _p(300, "simulated seconds an unused cache entry lives")
    # --- latency: ttft = base + a * uncached + b * cached; latency = ttft + output * decode ------
    # Prefill of ~10k uncached tokens/s, cached tokens ~10x cheaper, ~65 output tokens/s: the
    # order of magnitude of hosted frontier models.
    latency_base_s: NonNegative = _p(0.5, "fixed time to first token, s")
    latency_s_per_uncached_token: NonNegative = _p(1.0e-4, "prefill per uncached prompt token, s")
    latency_s_per_cached_token: NonNegative = _p(1.0e-5, "prefill per cached prompt token, s")
    decode_s_per_token: NonNegative = _p(0.015, "per output token, s")

    @classmethod
    def from_mapping(
        cls, params: Mapping[str, Any], mechanisms: Mapping[str, Any] | None = None
    ) -> SimParams:
        """`mechanisms`: name -> bool; each one switched off overrides its parameters (MECHANISMS)."""
        return knobs.validate(
            cls,
            {**params, **ablated(mechanisms or {})},
            "model.params",
            "conf/model/<name>.yaml or the command line",
        )


# Mechanisms an ablation can switch off (`model.mechanisms.<name>: false`), and the parameters
# that switching one off sets: its effect must then disappear (tests/bench/sim/test_ablation.py).
MECHANISMS = {
    "recall_decay": {"rot_max_drop": 0.0, "middle_dip": 0.0},  # recall = recall_max wherever a fact sits
    "temptation": {"p_tempt": 0.0},  # no tidy-up is ever done
    "stale_memory": {"p_stale_replace_fail": 0.0, "p_stale_clobber": 0.0},  # no version confusion
    "summariser_loss": {
        "retain_plan": 1.0,
        "retain_task_invariant": 1.0,
        "retain_invariant": 1.0,
        "retain_fact": 1.0,
        "retain_check": 1.0,
        "p_verbatim": 1.0,
    },  # summaries keep all
    "exploration": {
        "p_look_history": 0.0,
        "p_check_changes": 0.0,
        "p_reread_before_edit": 0.0,
    },  # never looks at git or re-reads unprompted
    "competence": {"p_edit_error": 0.0},  # every edit batch is made as the oracle says
}


class Mechanisms(Knobs):
    """`model.mechanisms`: an ablation switches one off and its effect must disappear (docs/instrument.md);
    each sets the parameters MECHANISMS lists, whatever `params` says."""

    recall_decay: StrictBool = Field(
        default=True, description="false: recall = recall_max wherever a fact sits, however long the context"
    )
    temptation: StrictBool = Field(default=True, description="false: no tidy-up is ever done (p_tempt = 0)")
    stale_memory: StrictBool = Field(
        default=True, description="false: no version confusion between visible copies of a file"
    )
    summariser_loss: StrictBool = Field(
        default=True, description="false: a summary keeps every statement, verbatim, and every plan line"
    )
    exploration: StrictBool = Field(
        default=True, description="false: never looks at git status/log or re-reads a file unprompted"
    )
    competence: StrictBool = Field(
        default=True, description="false: no edit batch goes wrong for reasons unrelated to the context"
    )


def ablated(mechanisms: Mapping[str, Any]) -> dict[str, float]:
    """The parameter overrides of the mechanisms switched off."""
    switches = knobs.validate(
        Mechanisms, mechanisms, "model.mechanisms", "conf/model/<name>.yaml or the command line"
    )
    out: dict[str, float] = {}
    for name, overrides in MECHANISMS.items():
        if not getattr(switches, name):
            out.update(overrides)
    return out


class SimPrice(Knobs):
    """`model.price` of the sim, USD per million tokens, shaped like a frontier model's list price
    (Claude Sonnet 4 list prices, 2025: $3 in, $15 out, $0.30 cache hits, $3.75 5-minute cache writes)."""

    input: NonNegative = _p(3.0, "USD per million uncached input tokens")
    output: NonNegative = _p(15.0, "USD per million output tokens")
    cache_read: NonNegative = _p(0.30, "USD per million input tokens read from the cache")
    cache_write: NonNegative = _p(3.75, "USD per million input tokens written to the cache")


DRAWS = ("shared", "independent")


class SimModel(Knobs):
    """`model=sim`: a behavioural model of an LLM coding agent, offline and deterministic. It reads
    only the model-visible messages (bench/sim/provider.py); every knob is recorded with the run."""

    model_config = ConfigDict(frozen=True, extra="forbid", protected_namespaces=())  # `model_id` is a knob
    name: StrictStr = Field(description="the model's name: sim, oracle, sim_<calibration>")
    provider: Literal["sim", "oracle"] = Field(default="sim", description="the provider that serves it")
    model_id: StrictStr | None = Field(
        default=None, description="the reported model id; null = name (not in the composed config unless set)"
    )
    window: Annotated[StrictInt, Field(gt=0)] = Field(
        default=200000, description="tokens the model accepts; an arm may give the strategy less"
    )
    max_output: Annotated[StrictInt, Field(gt=0)] = Field(
        default=4096, description="tokens reserved for a reply; a longer reply stops with max_tokens"
    )
    time_scale: NonNegative = _p(0.0, "0 = record latencies only; >0 sleeps latency * time_scale per call")
    price: SimPrice = Field(default=SimPrice(), description="USD per million tokens, by usage category")
    mechanisms: Mechanisms = Field(default=Mechanisms(), description="ablations: a mechanism switched off")
    record: StrictStr | None = Field(
        default=None,
        description="a path: append every call to a cassette for "
        "model=replay (not in the composed config unless set)",
    )
    # Common random numbers (docs/design.md §7). shared: every draw is keyed by (seed, step,
    # attempt, content), so trials that differ only in strategy or arm share their luck and
    # disagree only where the contexts differ (a pilot's discordance psi ~ delta). independent:
    # each cell gets its own stream, as a real model's sampling does (psi ~ p1(1-p2) + p2(1-p1)).
    draws: Literal["shared", "independent"] = Field(
        default="shared",
        description="shared: common random numbers across cells; independent: a stream per cell",
    )
    stream: StrictStr = Field(
        default="${oc.select:strategy.name,none}/${oc.select:arm.name,none}/${oc.select:ablation,none}",
        description="the cell's name, read only with draws=independent",
    )
    params: SimParams = Field(
        default=SimParams(), description="how it recalls, acts, explores, summarises, is billed"
    )


# Keys with a null default that the composed config has only when set (the YAML never stated
# them): registering them would add a key to every sim trial's config and move its hash.
UNSTATED = ("model_id", "record")


def store() -> None:
    """`/knobs/model/sim`: the schema's defaults, but the UNSTATED keys."""
    from hydra.core.config_store import ConfigStore

    node = {k: v for k, v in knobs.defaults(SimModel).items() if k not in UNSTATED}
    ConfigStore.instance().store(group="knobs/model", name="sim", node=node)


def load(model_cfg: Mapping[str, Any]) -> SimModel:
    """The composed `model` group as a SimModel, or a ConfigError of one line naming the key."""
    name = model_cfg.get("name") or "sim"
    return knobs.validate(SimModel, model_cfg, "model", f"conf/model/{name}.yaml or the command line")
