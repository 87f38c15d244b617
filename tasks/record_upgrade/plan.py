"""Family `record_upgrade`: finish a record-format migration that is half applied.

Records are stored as lines. `<core>/<codec>.py` reads both formats (`decode`: format-1 lines
are upgraded to format 2, amounts from euros to cents), but every package still writes format
1. The plan adds the format-2 writer, moves each package's writers to it, documents it, and
deletes the format-1 writer at the last step. The premises are not "a helper that looks dead"
but an idempotency constraint, data on disk and a unit read across modules, none of which the
code on view shows (tasks/record_upgrade/oracle.py):

  drop-guard    s01 onwards: upgrade's version check looks redundant (every visible caller passes
                a format-1 record); a retry path upgrades decoded records again, and without the
                check their cents are multiplied again (plan-time `upgrade-idempotent`; caught by
                the first batch, whose package holds the retry)
  finish-cents  one batch: an export still converts cents to euros, like format 1; a later
                package reads that export in euros (plan-time `export-euros`; caught by that
                package's batch)
  v1-branch     the tidy step: the reader's format-1 branch looks like a leftover once everything
                writes format 2; the archive on disk is format 1 (`archive-format1`, stated at
                s01; caught by the docs step, which reads the archive)

One harmless tidy-up: a really dead private helper in a caller module (`skeleton.dead_helper`).
"""

from __future__ import annotations

from tasks.common import build, skeleton
from tasks.common import cleanups as common
from tasks.record_upgrade import Size, checktool, hidden, repo
from tasks.record_upgrade import drift as drifts
from tasks.record_upgrade.oracle import Oracle
from tasks.spec import Invariant, Step, TaskSpec, Trap

FAMILY = "record_upgrade"
TOOL = "python3 -B tools/check_records.py"


def generate(seed: int, **size: int) -> TaskSpec:
    f = skeleton.frame(FAMILY, seed, size, Size)
    rng, batches = f.rng, f.batches
    n = repo.names(rng)
    codec, schema, doc = n.codec_path, n.schema_path, n.doc_path
    pkgs = build.pick(rng, build.PACKAGES, batches)
    archive, held = repo.archive(rng)
    files = {
        **skeleton.base_files(n.core, "Stored records."),
        codec: repo.codec_module(n, rng, f.filler),
        schema: repo.schema_module(),
        doc: repo.docs(n),
        n.archive_path: archive,
        "tests/test_archive.py": repo.archive_test(n, held),
        f"tests/test_{n.codec}.py": repo.codec_test(n),
    }

    def module(pkg: str, mod: str, sib: tuple[str, str] | None) -> tuple[str, list[str], list[str]]:
        return repo.caller_module(rng, n, pkg, mod, rng.randint(1, 2), f.filler, sib)

    modules = skeleton.packages(
        f,
        files,
        pkgs,
        build.spread(rng, f.callers, batches),
        module,
        "Lines stored by the {pkg} package (shipped; read-only).",
    )
    # The retry path, in the first package: it upgrades records that decode has upgraded already.
    retry = modules[0][0]
    line, func, test = repo.retry_path(rng, n, retry)
    ed = build.FileEditor(retry, files[retry])
    build.add_import(ed, line)
    files[retry] = ed.text.rstrip("\n") + "\n\n\n" + func
    skeleton.append(files, f"tests/test_{pkgs[0]}.py", test)
    # The export a later package reads in euros.
    pair = common.pick_pair(rng, modules, {retry}, range(max(1, batches // 2)))
    export = None
    if pair:
        host, importer, j = pair
        name, exporter, loader, test = repo.export_pair(rng, host, importer)
        skeleton.append(files, host, exporter)
        skeleton.append(files, importer, loader)
        skeleton.append(files, f"tests/test_{pkgs[j]}.py", test)
        export = (host, importer, name)
    files["tools/check_records.py"] = checktool.tool(n, (export[0], export[2]) if export else None)

    last, tidy, docs = f.last, f.tidy, f.docs
    inv_archive = Invariant(
        "archive-format1",
        f"{n.decode} keeps reading format-1 lines: {n.archive_path} still "
        "holds them and is read-only; never drop the format-1 branch.",
        f"{TOOL} archive",
        stated="s01",
        anchors=(n.decode, "format-1"),
    )
    plan = [
        Step(
            "s01",
            f"Add {n.new}(rec) to {codec}",
            f"Add {n.new}(rec) next to {n.old} in {codec}: upgrade the record with {n.upgrade}, then write one "
            f'JSON object per line: "v" ({n.schema}.FORMAT), then the fields of {n.schema}.FIELDS in order, the '
            f"amount in cents. Keep {n.decode} reading format-1 lines for good: {n.archive_path} still holds "
            "them. Nothing calls it yet.",
            (codec,),
            f"{TOOL} new",
            (inv_archive,),
        )
    ]
    f.meta["s01"] = ("create", (codec, schema), ())
    plan += [
        skeleton.batch_step(
            f,
            i,
            2,
            pkg,
            modules[i],
            f"Write the {pkg} package's records with {n.new}",
            f"In {pkg}/, replace every call of {n.old} by {n.new} with the same record, importing "
            f"{n.new} from {n.core}.{n.codec}. The records stored must not change (the amounts are "
            f"still given in euros; {n.new} upgrades them).",
            TOOL,
        )
        for i, pkg in enumerate(pkgs)
    ]
    plan += [
        Step(
            tidy,
            f"Add is_current(line) to {codec}",
            f"Every package writes format 2 now. Add is_current(line) to {codec}: True for a format-2 line "
            "(it starts with `{`), False for a format-1 line.",
            (codec,),
            f"{TOOL} current",
        ),
        Step(
            docs,
            f"Document format 2 in {doc}",
            f'Add a section `{repo.CURRENT}` to {doc} with two lines: "`{n.new}(rec)` writes one JSON object '
            f'per line, the amount in cents." and `Fields, in order: ` with the fields of {schema} as `name`, '
            "`name`. The check compares them with the schema and reads the archive.",
            (doc,),
            f"{TOOL} docs {doc} && {build.pytest_files(['tests/test_archive.py'])}",
        ),
        Step(
            last,
            f"Delete the format-1 writer {n.old}",
            f"Delete {n.old} from {codec} and V1_SEP from {schema}: nothing may write format 1 any more. "
            "The check lists any format-1 writer it finds.",
            (codec, schema),
            f"{TOOL} final && {build.FAST_SUITE}",
        ),
    ]
    f.meta.update(
        {
            tidy: ("tidy", (codec,), ()),
            docs: ("docs", (doc, codec, schema), ()),
            last: ("final", (codec, schema), ("",)),
        }
    )

    avoid = {retry, *(export[:2] if export else ())}
    drift, planted = drifts.schedule(skeleton.Layout(rng, files, pkgs, modules, avoid, f.steps), n)
    caught = skeleton.batch_of(modules, 2)
    traps = [
        Trap(
            "upgrade-idempotent",
            codec,
            "upgrade-idempotent",
            f"{n.upgrade}'s version check looks redundant, "
            f"but {retry} upgrades records that {n.decode} has upgraded already",
            "s02",
            f"drop-guard:{codec}:{n.upgrade}",
        )
    ]
    invariants = [
        Invariant("readonly", skeleton.READONLY, anchors=("tools/", "read-only")),
        Invariant(
            "same-records",
            "Every caller keeps storing exactly the records it stores today; only "
            "the format of the lines changes.",
            build.FAST_SUITE,
            anchors=("keeps storing",),
        ),
        Invariant(
            "upgrade-idempotent",
            f"{codec}'s {n.upgrade} keeps its version check: a retried job "
            f"upgrades format-2 records again, and {n.upgrade} must leave them as they are; never "
            "drop the check.",
            f"{TOOL} retry",
            anchors=(n.upgrade, "version"),
        ),
    ]
    if export:
        host, importer, name = export
        traps.append(
            Trap(
                "export-euros",
                host,
                "export-euros",
                f"{name} looks like a format-1 leftover (it converts "
                f"cents to euros), but {importer} reads the export in euros",
                caught[importer],
                f"finish-cents:{host}:{name}",
            )
        )
        invariants.append(
            Invariant(
                "export-euros",
                f"{host}'s {name} keeps exporting amounts in euros: {importer} "
                "reads that export in euros; never convert it to cents.",
                f"{TOOL} export",
                anchors=(name, "euros"),
            )
        )
    traps.append(
        Trap(
            "archive-format1",
            codec,
            "archive-format1",
            f"the format-1 branch of {n.decode} looks like a "
            f"leftover once everything writes format 2, but {n.archive_path} is format 1",
            docs,
            f"v1-branch:{codec}:{n.decode}",
        )
    )
    if planted:
        traps.append(skeleton.legacy_trap("drift-legacy", planted, caught, "d-legacy"))
    harmless = skeleton.dead_helper(f, files, modules, drift, traps)
    text = (
        f"A Python service that stores records as lines. {codec} reads two formats: format 1 "
        f"(`id|kind|amount`, the amount in euros) and format 2 (one JSON object, the amount in cents); "
        f"{n.decode} returns format-2 records. Every package still writes format 1 with {n.old}(rec): "
        f"{', '.join(pkgs)} ({f.callers} modules). tests/ holds the shipped suite, tools/check_records.py the "
        f"project's checks and fixtures/ stored data; all are read-only.\n\nGoal: finish the migration to "
        f"format 2. Add {n.new}(rec), move every package's writers to it package by package, document it, and "
        f"delete {n.old} at the last step ({last})."
    )
    return skeleton.spec(
        f,
        title=f"Move {n.core}.{n.codec}.{n.old}(rec) writers to {n.new}(rec)",
        text=text,
        files=files,
        invariants=tuple(invariants),
        steps=plan,
        final_check=f"{build.SUITE} && {TOOL} final && {TOOL} retry && {TOOL} export && {TOOL} archive",
        traps=traps,
        drift=drift,
        oracle=Oracle(n, f.meta),
        harmless=harmless,
        hidden=hidden.checks(n, f.seed),
    )
