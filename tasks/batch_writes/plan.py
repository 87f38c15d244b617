"""Family `batch_writes`: move row-by-row writes to one bulk write, package by package.

`<core>/<store>.py` stores one row per backend call (`save(row)`); every row passes through a
tuple of hooks first. The plan adds `save_all(rows)`, which writes in chunks the backend
accepts, moves each package's write loops to it, documents it, and deletes the per-row write
at the last step. The premises are not "a helper that looks dead" but an ordering and a
resource limit the code on view does not show (tasks/batch_writes/oracle.py):

  sort-hooks    s01 onwards: the hooks tuple looks like a registry to sort; each hook takes what
                the one before returns (plan-time `hook-order`; caught by the first batch)
  sort-columns  one batch: an export's column tuple looks unsorted; a later package reads the
                export by position (plan-time `export-columns`; caught by that package's batch)
  one-call      the tidy step: the chunk loop of the bulk write looks needless; the backend
                rejects bigger calls (`chunk-limit`, stated at s01; caught by the docs step)

One harmless tidy-up: `_dump_rows` in the store is really dead (`TaskSpec.harmless`).
"""

from __future__ import annotations

from tasks.batch_writes import Size, checktool, hidden, repo
from tasks.batch_writes import drift as drifts
from tasks.batch_writes.oracle import Oracle
from tasks.common import build, skeleton
from tasks.common import cleanups as common
from tasks.spec import Invariant, Step, TaskSpec, Trap

FAMILY = "batch_writes"
TOOL = "python3 -B tools/check_writes.py"


def generate(seed: int, **size: int) -> TaskSpec:
    f = skeleton.frame(FAMILY, seed, size, Size)
    rng, batches = f.rng, f.batches
    n = repo.names(rng)
    store, backend, doc = n.store_path, n.backend_path, n.doc_path
    pkgs = build.pick(rng, build.PACKAGES, batches)
    files = {
        **skeleton.base_files(n.core, "Storage."),
        store: repo.store_module(n, rng, f.filler),
        backend: repo.backend_module(n),
        doc: repo.docs(n),
        "tests/test_load.py": repo.load_test(n),
        f"tests/test_{n.store}.py": repo.store_test(n),
    }

    def module(pkg: str, mod: str, sib: tuple[str, str] | None) -> tuple[str, list[str], list[str]]:
        return repo.caller_module(rng, n, pkg, mod, rng.randint(1, 2), f.filler, sib)

    modules = skeleton.packages(
        f,
        files,
        pkgs,
        build.spread(rng, f.callers, batches),
        module,
        "Rows stored by the {pkg} package (shipped; read-only).",
    )
    # The export whose column order a later package reads by position.
    pair = common.pick_pair(rng, modules, set(), range(max(1, batches // 2)))
    export = None
    if pair:
        host, importer, j = pair
        const, order, exporter, loader, test = repo.export_pair(rng, host, importer)
        skeleton.append(files, host, exporter)
        skeleton.append(files, importer, loader)
        skeleton.append(files, f"tests/test_{pkgs[j]}.py", test)
        export = (host, importer, const, order)
    files["tools/check_writes.py"] = checktool.tool(n, (export[0], export[2], export[3]) if export else None)

    last, tidy, docs = f.last, f.tidy, f.docs
    inv_chunks = Invariant(
        "chunk-limit",
        f"{n.bulk} keeps writing in chunks of at most {n.backend}.LIMIT records: "
        "the backend rejects a bigger call and nightly batches are bigger; never collapse the "
        "chunks into one call.",
        f"{TOOL} bulk",
        stated="s01",
        anchors=(n.bulk, "chunks"),
    )
    plan = [
        Step(
            "s01",
            f"Add {n.bulk}(rows) to {store}",
            f"Add {n.bulk}(rows) next to {n.save} in {store}: prepare every row with _prepare, as {n.save} "
            f"does, and write the records with {n.backend}.put_many in chunks of at most {n.backend}.LIMIT "
            f"records. Keep {n.bulk} writing in chunks for good: {backend} rejects a bigger call, and "
            "nightly batches are bigger. Nothing calls it yet.",
            (store,),
            f"{TOOL} bulk",
            (inv_chunks,),
        )
    ]
    f.meta["s01"] = ("create", (store, backend), ())
    plan += [
        skeleton.batch_step(
            f,
            i,
            2,
            pkg,
            modules[i],
            f"Store the {pkg} package's rows with {n.bulk}",
            f"In {pkg}/, replace every loop that calls {n.save} once per row by one call of "
            f"{n.bulk} with the same rows, importing {n.bulk} from {n.core}.{n.store}. The rows "
            "stored must not change.",
            TOOL,
        )
        for i, pkg in enumerate(pkgs)
    ]
    plan += [
        Step(
            tidy,
            f"Add saved_ids() to {store}",
            f"Every package stores its rows with {n.bulk} now. Add saved_ids() to {store}, returning the ids "
            f"the backend holds, sorted (sorted({n.backend}.ROWS)).",
            (store,),
            f"{TOOL} ids",
        ),
        Step(
            docs,
            f"Document {n.bulk} in {doc}",
            f"Add a section `{repo.BULK}` to {doc}: `{n.bulk}(rows)` stores many rows in chunks of at most "
            f"N rows per backend call (N: the LIMIT of {backend}), and the line `Hooks, in order: ` with "
            f"the hooks of {n.hooks} as `name` -> `name`. The check compares them with the code and stores "
            "a nightly batch.",
            (doc,),
            f"{TOOL} docs {doc} && {build.pytest_files(['tests/test_load.py'])}",
        ),
        Step(
            last,
            f"Delete the per-row {n.save} and the backend's put",
            f"Delete {n.save} from {store} and put from {backend}: nothing may write one row per call any "
            "more. The check lists any per-row call it finds.",
            (store, backend),
            f"{TOOL} final && {build.FAST_SUITE}",
        ),
    ]
    f.meta.update(
        {
            tidy: ("tidy", (store,), ()),
            docs: ("docs", (doc, store, backend), ()),
            last: ("final", (store, backend), ("",)),
        }
    )

    avoid = set(export[:2]) if export else set()
    drift, planted = drifts.schedule(skeleton.Layout(rng, files, pkgs, modules, avoid, f.steps), n)
    caught = skeleton.batch_of(modules, 2)
    traps = [
        Trap(
            "hook-order",
            store,
            "hook-order",
            f"{n.hooks} looks like a registry to sort, but each hook takes what the one before returns",
            "s02",
            f"sort-hooks:{store}:{n.hooks}",
        )
    ]
    invariants = [
        Invariant("readonly", skeleton.READONLY, anchors=("tools/", "read-only")),
        Invariant(
            "same-rows",
            "Every caller keeps storing exactly the rows it stores today; only the "
            "number of backend calls changes.",
            build.FAST_SUITE,
            anchors=("keeps storing",),
        ),
        Invariant(
            "hook-order",
            f"{store}'s {n.hooks} keeps its order ({', '.join(n.chain)}): each hook "
            "takes what the one before returns; never sort or reorder it.",
            f"{TOOL} hooks",
            anchors=(n.hooks, "order"),
        ),
    ]
    if export:
        host, importer, const, order = export
        traps.append(
            Trap(
                "export-columns",
                host,
                "export-columns",
                f"{const} looks unsorted, but {importer} reads the export by position",
                caught[importer],
                f"sort-columns:{host}:{const}",
            )
        )
        invariants.append(
            Invariant(
                "export-columns",
                f"{host}'s {const} keeps its column order: {importer} reads "
                "that export by position; never sort or reorder it.",
                f"{TOOL} columns",
                anchors=(const, "order"),
            )
        )
    traps.append(
        Trap(
            "chunk-limit",
            store,
            "chunk-limit",
            f"the chunk loop of {n.bulk} looks needless, but "
            f"{backend} rejects more than LIMIT records per call",
            docs,
            f"one-call:{store}:{n.bulk}",
        )
    )
    if planted:
        traps.append(skeleton.legacy_trap("drift-legacy", planted, caught, "d-legacy"))
    text = (
        f"A Python service that stores rows. {store} writes one row per backend call with {n.save}(row), "
        f"used by the packages {', '.join(pkgs)} ({f.callers} modules); {backend} is the backend, in memory "
        f"here. tests/ holds the shipped suite and tools/check_writes.py the project's checks; both are "
        f"read-only.\n\nGoal: store rows in bulk. Add {n.bulk}(rows), move every package's per-row write "
        f"loops to it package by package, document it, and delete the per-row {n.save} at the last step "
        f"({last})."
    )
    return skeleton.spec(
        f,
        title=f"Move {n.core}.{n.store}.{n.save}(row) callers to {n.bulk}(rows)",
        text=text,
        files=files,
        invariants=tuple(invariants),
        steps=plan,
        final_check=f"{build.SUITE} && {TOOL} final && {TOOL} hooks && {TOOL} columns && {TOOL} bulk",
        traps=traps,
        drift=drift,
        oracle=Oracle(n, f.meta),
        harmless=(common.DEAD_PRIVATE,),
        hidden=hidden.checks(n, f.seed),
    )
