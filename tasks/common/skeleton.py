"""The skeleton every family's `generate(seed)` shares, so a family is its premises.

Each family is a migration carried out package by package: a few set-up steps, one batch
step per package, then closing steps (a tidy step, a docs step, the last step that removes
the scaffolding). What differs is the premise -- the names, the code that changes, the facts
that make a tidy-up a mistake. What is the same lives here:

  `Frame`         seed, size knobs validated, the seeded rng, how many packages and modules
  `base_files`    the files every generated repository ships (fast runner, pytest.ini, ...)
  `append`        a function added at the end of a generated file
  `packages`      the caller packages: modules, filler, a sibling import graph, package tests
  `batch_step`    one package's step, and the oracle's plan entry for it
  `Layout`        the packages a family's drift commits land in, and the rng they draw on
  `legacy_drift`  the shared `new_trap` drift (a `legacy_*` helper only its commit message keeps)
  `caller_drift`  the shared `new_caller` drift (a colleague's new module in a migrated package)
  `drift_schedule` a family's drift commits with the legacy one, sorted by when they land
  `dead_helper`   the shared harmless tidy-up (a private helper that is really dead)
  `spec`          the TaskSpec, with the task id built from the knobs that differ from defaults

The rng is drawn in one fixed order (a family's own draws between these calls included), so
the same seed and knobs give a byte-identical task.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from bench.core.knobs import defaults, validate
from tasks import task_id
from tasks.common import build
from tasks.common import cleanups as common
from tasks.common.run_tests import RUNNER_PATH, RUNNER_SOURCE
from tasks.common.size import TaskSize
from tasks.spec import Drift, Invariant, Oracle, Step, TaskSpec, Trap

READONLY = (
    "tests/, tools/ and pytest.ini are shipped read-only: change the code, never the tests or the checks."
)


@dataclass
class Frame:
    """A family's generation in progress: its size and its rng, drawn in a fixed order."""

    family: str
    seed: int
    knobs: dict[str, int]
    defaults: Mapping[str, int | None]  # the schema's; callers' null: drawn by seed
    steps: int
    batches: int  # one package per batch step
    filler: int
    callers: int
    rng: random.Random
    meta: build.Meta = field(default_factory=dict)  # the oracle's plan, filled as steps are made

    @property
    def last(self) -> str:
        return build.sid(self.steps)

    @property
    def tidy(self) -> str:
        return build.sid(self.steps - 2)

    @property
    def docs(self) -> str:
        return build.sid(self.steps - 1)


def frame(family: str, seed: int, size: Mapping[str, object], schema: type[TaskSize]) -> Frame:
    """Validate the knobs against the family's `schema` (tasks/common/size.py); `schema.OVERHEAD`
    steps are not batches; the default number of modules is 2 per batch plus a seeded draw from
    `schema.SPARE` (drawn whether or not callers is given, so the rng's order never depends on it)."""
    knobs = validate(schema, size, "task.size", f"conf/task/{family}.yaml or the command line")
    given = knobs.model_dump(exclude_unset=True)
    batches = knobs.steps - schema.OVERHEAD
    rng = random.Random(f"{family}/{seed}")
    drawn = 2 * batches + rng.randint(*schema.SPARE)
    callers = drawn if knobs.callers is None else knobs.callers
    return Frame(family, seed, given, defaults(schema), knobs.steps, batches, knobs.filler, callers, rng)


def base_files(app: str, doc: str) -> dict[str, str]:
    """Every repository's scaffolding: the fast test runner, pytest.ini, .gitignore, the app package."""
    return {
        RUNNER_PATH: RUNNER_SOURCE,
        "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\ntestpaths = tests\n",
        ".gitignore": "__pycache__/\n.pytest_cache/\n",
        f"{app}/__init__.py": f'"""{doc}"""\n',
    }


def append(files: dict[str, str], path: str, source: str) -> None:
    """Add `source` (a function) at the end of the file `path`, two blank lines after its text."""
    files[path] = files[path].rstrip("\n") + "\n\n\n" + source


# (package, module, sibling (module, helper) it imports or None) -> (text, test functions, helper names)
ModuleMaker = Callable[[str, str, "tuple[str, str] | None"], "tuple[str, list[str], list[str]]"]


def packages(
    f: Frame, files: dict[str, str], pkgs: list[str], counts: list[int], make: ModuleMaker, test_doc: str
) -> list[list[str]]:
    """Each package's modules (paths), made by `make`, and its shipped test `tests/test_<pkg>.py`
    (docstring `test_doc`, {pkg} filled in). A module imports a helper of an earlier module of its
    package half of the time: the package's call graph."""
    modules: list[list[str]] = []
    for pkg, count in zip(pkgs, counts, strict=True):
        mods, tests, seen = build.pick(f.rng, build.MODULES, count, set()), [], []  # type: ignore[var-annotated]
        files[f"{pkg}/__init__.py"] = f'"""The {pkg} package."""\n'
        for mod in mods:
            sib = f.rng.choice(seen) if seen and f.rng.random() < 0.5 else None
            text, mod_tests, names = make(pkg, mod, sib)
            files[f"{pkg}/{mod}.py"], tests = text, tests + mod_tests
            seen += [(mod, name) for name in names]
        files[f"tests/test_{pkg}.py"] = (
            f'"""{test_doc.format(pkg=pkg)}"""\n\n'
            f"from {pkg} import {', '.join(mods)}\n\n\n" + "\n\n".join(tests)
        )
        modules.append([f"{pkg}/{m}.py" for m in mods])
    return modules


def batch_step(
    f: Frame,
    index: int,
    first: int,
    pkg: str,
    modules: list[str],
    title: str,
    instructions: str,
    tool: str,
    establishes: tuple[Invariant, ...] = (),
) -> Step:
    """Package `pkg`'s step, `s<first + index>`, migrating `modules`, checked by the family's
    `tool migrated <pkg>` and the package's tests; its plan entry goes to `f.meta`."""
    step = build.sid(first + index)
    f.meta[step] = ("batch", tuple(modules), (pkg,))
    check = f"{tool} migrated {pkg} && {build.pytest_files([f'tests/test_{pkg}.py'])}"
    return Step(step, title, instructions, tuple(modules), check, establishes)


def batch_of(modules: list[list[str]], first: int) -> dict[str, str]:
    """module path -> the id of the batch step that migrates it (package i at `s<first + i>`)."""
    return {m: build.sid(first + i) for i, mods in enumerate(modules) for m in mods}


@dataclass(frozen=True)
class Layout:
    """The generated repository as its drift commits see it: where they may land, and the rng
    they draw on (the family's, in its fixed order)."""

    rng: random.Random
    files: dict[str, str]  # the repository so far; the legacy drift plants its helper here
    pkgs: list[str]  # the caller packages, in batch order
    modules: list[list[str]]  # each package's module paths
    avoid: set[str]  # modules a trap of the family's own lives in: no drift takes them
    steps: int


def legacy_drift(at: Layout, first: int, author: str) -> tuple[Drift | None, common.Legacy | None]:
    """The `new_trap` every family has: a colleague's `legacy_*` helper in a package not yet
    migrated, imported by a later package; only the commit message says to keep it. It lands
    before the host's batch (steps `s<first>`.. the host's). None when no pair of modules fits."""
    pair = common.pick_pair(at.rng, at.modules, at.avoid)
    if not pair:
        return None, None
    host, importer, j = pair
    planted = common.plant_legacy(at.rng, at.files, host, importer, f"tests/test_{at.pkgs[j]}.py")
    host_pkg = host.split("/")[0]
    lands = build.sid(at.rng.randint(first, first + at.pkgs.index(host_pkg)))
    return Drift(
        "d-legacy",
        "new_trap",
        lands,
        f"{host_pkg}: keep {planted.name} in {host}, {importer} imports it",
        author,
        tuple(sorted(planted.files.items())),
        f"{planted.name} in {host} looks dead to anyone migrating {host_pkg}, but {importer} "
        "imports it; only this commit's message says so",
    ), planted


def new_module(at: Layout) -> str:
    """A module name the first package does not have yet: where a `new_caller` drift puts its module."""
    return at.rng.choice([m for m in build.MODULES if f"{at.pkgs[0]}/{m}.py" not in at.files])


def caller_drift(
    at: Layout, earliest: int, mod: str, source: str, test: str, message: str, author: str, description: str
) -> Drift:
    """The `new_caller` drift: a colleague adds `<pkg>/<mod>.py` (`source`) and its test
    `tests/test_<pkg>_<mod>.py` to the first package, which the agent has migrated already by
    the time it lands (before a seeded step from `s<earliest>` to the one before the last)."""
    pkg = at.pkgs[0]
    return Drift(
        "d-caller",
        "new_caller",
        build.sid(at.rng.randint(earliest, at.steps - 1)),
        message,
        author,
        ((f"{pkg}/{mod}.py", source), (f"tests/test_{pkg}_{mod}.py", test)),
        description,
    )


def drift_schedule(
    at: Layout, drift: list[Drift], first: int, author: str
) -> tuple[tuple[Drift, ...], common.Legacy | None]:
    """A family's own drift commits and then the shared `legacy_drift` (drawn last), sorted by
    the step each lands before; and the legacy helper planted, if the packages left room."""
    legacy, planted = legacy_drift(at, first, author)
    return tuple(sorted([*drift, legacy] if legacy else drift, key=lambda d: d.before_step)), planted


def legacy_invariant(iid: str, planted: common.Legacy) -> Invariant:
    return Invariant(
        iid,
        f"{planted.name} in {planted.host} stays although nothing there calls it: "
        f"{planted.importer} imports it.",
        f"python3 -B -c 'from {planted.dotted(planted.host)} import {planted.name}'",
        anchors=(planted.name,),
    )


def legacy_trap(iid: str, planted: common.Legacy, caught: Mapping[str, str], drift: str = "") -> Trap:
    """The trap of a planted legacy helper: stated by invariant `iid`, or only by `drift`'s message."""
    said = f" (said only by the {drift} commit)" if drift else ""
    return Trap(
        iid,
        planted.host,
        "" if drift else iid,
        f"{planted.name} looks dead in {planted.host}, but {planted.importer} imports it{said}",
        caught[planted.importer],
        planted.key,
        drift,
    )


def dead_helper(
    f: Frame, files: dict[str, str], modules: list[list[str]], drift: tuple[Drift, ...], traps: list[Trap]
) -> tuple[str, ...]:
    """The harmless tidy-up: a really dead private helper in one caller module that no drift
    rewrites and no trap lives in, found at that package's batch step; refusing it is the error
    of doing too little (`TaskSpec.harmless`). Drawn last, so the rest of the task is as before."""
    taken = {p for d in drift for p, _ in d.files} | {t.path for t in traps}
    free = [m for mods in modules for m in mods if m not in taken]
    if not free:
        return ()
    common.plant_dead(files, f.rng.choice(free))
    return (common.DEAD_PRIVATE,)


def spec(
    f: Frame,
    *,
    title: str,
    text: str,
    files: Mapping[str, str],
    invariants: tuple[Invariant, ...],
    steps: list[Step],
    final_check: str,
    traps: list[Trap],
    drift: tuple[Drift, ...],
    oracle: Oracle,
    harmless: tuple[str, ...] = (),
    hidden: tuple[tuple[tuple[str, str], ...], str] = ((), ""),
) -> TaskSpec:
    return TaskSpec(
        task_id=task_id(f.family, f.seed, **{k: v for k, v in f.knobs.items() if f.defaults.get(k) != v}),
        family=f.family,
        seed=f.seed,
        title=title,
        text=text,
        files=tuple(sorted(files.items())),
        invariants=invariants,
        steps=tuple(steps),
        final_check=final_check,
        protected=build.PROTECTED,
        traps=tuple(traps),
        drift=drift,
        test_command=build.SUITE,
        oracle=oracle,
        harmless=harmless,
        hidden=hidden[0],
        hidden_check=hidden[1],
    )
