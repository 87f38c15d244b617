"""Facts about the code are read from its source (tasks/common/walker.py FACTS; issue 42 item 3):
an object that says what the check wants about itself (`__code__`, `__name__`) no longer passes a
check tool, while asking the object, as the tools did, is fooled by it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tasks import generate
from tests.helpers.task_replay import replay, run_check, write_repo

# What `push` keeps: its legacy form, behind an object whose code object says (url, policy).
LIAR = '''

class _Liar:
    """Calls the legacy function; says it takes (url, policy)."""
    __code__ = (lambda url, policy: None).__code__

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        return self.fn(*args)


{fn} = _Liar({fn})
'''


def _final_tree(family, seed, root):
    spec = generate(family, seed)
    *_, (_, _, _, _, code, out, files) = replay(spec, root, False)
    assert code == 0, out[-2000:]
    return spec, files


def test_a_function_that_lies_about_its_parameters_fails_check_api_final(tmp_path):
    spec, files = _final_tree("signature_migration", 2, tmp_path)
    n = spec.oracle.n
    client = f"{n.core}/{n.client}.py"
    files[client] = files[client].replace(
        f"def {n.fn}(url, policy):", f"def {n.fn}(url, {n.t}, {n.r}):"
    ) + LIAR.format(fn=n.fn)
    write_repo(tmp_path, files)
    code, out = run_check(tmp_path, "python3 -B tools/check_api.py final")
    assert code == 1 and f"{n.fn} must be a plain function taking exactly (url, policy)" in out, out
    # Asking the object, as the tool did before: the lie passes.
    asked = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
            f"from {n.core} import {n.client} as c; code = c.{n.fn}.__code__; "
            "print(code.co_argcount - code.co_posonlyargcount)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert asked.stdout.strip() == "2"


def test_hooks_named_in_order_by_their_objects_but_not_in_the_source_fail(tmp_path):
    spec, files = _final_tree("batch_writes", 1, tmp_path)
    n = spec.oracle.n
    store = f"{n.core}/{n.store}.py"
    a, b, z = n.chain
    # the hooks run in another order; each function renamed, from the package (a write in the store
    # itself would make its facts unknown), so that `__name__` reads as the chain
    files[store] = files[store].replace(f"{n.hooks} = ({a}, {b}, {z})", f"{n.hooks} = ({b}, {a}, {z})")
    files[f"{n.core}/__init__.py"] = files.get(f"{n.core}/__init__.py", "") + (
        f"\n\nfrom {n.core}.{n.store} import {a}, {b}\n\n{a}.__name__, {b}.__name__ = {b!r}, {a!r}\n"
    )
    write_repo(tmp_path, files)
    code, out = run_check(tmp_path, "python3 -B tools/check_writes.py hooks")
    assert code == 1 and f"runs ('{b}', '{a}', '{z}')" in out, out


# A fact is certain only from an unconditional top-level definition of a module that cannot bind
# names at run time (tasks/common/walker.py FACTS). Each attack keeps `def push(url, policy)` as the
# source says and adds a construct that could bind `push` otherwise; `check_api final` must fail
# and name it. (construct appended to the client, word the reason must name)
ATTACKS = {
    "star": ("from os.path import *", "from os.path import *"),
    "exec": ('exec("push = lambda url, *a: None")', "uses exec"),
    "eval": ("eval('exec(\"push = None\")')", "uses eval"),
    "setattr": ("setattr(push, 'x', None)", "uses setattr"),
    "vars": ('vars()["push"] = lambda url, *a: None', "uses vars"),
    "globals": ('globals()["push"] = lambda url, *a: None', "uses globals"),
    "globals_alias": ('_g = globals\n_g()["push"] = lambda url, *a: None', "uses globals"),
    "builtins_spelt": ("_b = __builtins__", "uses __builtins__"),
    "builtins_by_string": ('import os as _os\n_g = getattr(_os, "sep").__class__', "uses __class__"),
    "sys_modules": ("from sys import modules as _m\n_m[__name__].push = None", "uses sys"),
    "dict": ("_d = push.__dict__", "uses __dict__"),
    "module_getattr": ("def __getattr__(name):\n    return None", "uses __getattr__"),
    "importlib": ("import importlib\nimportlib.reload", "uses importlib"),
    "computed_getattr": ('_x = getattr(push, "__na" + "me__")', "getattr with a computed name"),
    "global_statement": ("def _f():\n    global push\n    push = None\n\n\n_f()", "global push"),
    "conditional_def": ("if True:\n    def push(url, t, r):\n        return None", "binds push other than"),
    "try_import": ("try:\n    from os import push\nexcept ImportError:\n    pass", "binds push other than"),
    "with_block": ("with open(__file__) as push:\n    pass", "binds push other than"),
    "deleted": ("del push", "binds push other than"),
    "attribute_store": ("push.__code__ = None", "uses __code__"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_module_that_can_bind_names_at_run_time_has_no_certain_facts(attack, tmp_path):
    spec, files = _final_tree("signature_migration", 2, tmp_path)
    n = spec.oracle.n
    client = f"{n.core}/{n.client}.py"
    code, out = run_check(tmp_path, "python3 -B tools/check_api.py final")
    assert code == 0, out  # the oracle's tree passes as it is
    snippet, named = ATTACKS[attack]
    files[client] += "\n\n" + snippet + "\n"
    write_repo(tmp_path, files)
    code, out = run_check(tmp_path, "python3 -B tools/check_api.py final")
    assert (
        code == 1 and f"{client}:1: facts about this module are read from its source" in out and named in out
    ), out


def test_a_star_import_and_a_dead_def_no_longer_pass_for_the_legacy_function(tmp_path):
    """The review's attack: the `push` that runs is the legacy one from a star import; the only
    `def push(url, policy)` is one that never runs. The walker used to read (2, 2) from it."""
    spec, files = _final_tree("signature_migration", 2, tmp_path)
    n = spec.oracle.n
    client = f"{n.core}/{n.client}.py"
    legacy = f"def {n.fn}(url, *args):\n    return None\n"  # accepts both forms
    files[f"{n.core}/_legacy.py"] = legacy
    files[client] = (
        files[client].replace(f"def {n.fn}(url, policy):", f"def _{n.fn}_unused(url, policy):")
        + f"\n\nfrom {n.core}._legacy import *\n\nif False:\n    def {n.fn}(url, policy):\n        pass\n"
    )
    write_repo(tmp_path, files)
    ran = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
            f"from {n.core}.{n.client} import {n.fn}; print({n.fn}.__code__.co_argcount, "
            f"{n.fn}('u', 1, 2))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ran.stdout.split() == ["1", "None"]  # the legacy form runs
    code, out = run_check(tmp_path, "python3 -B tools/check_api.py final")
    assert code == 1 and "import *" in out and f"{n.fn} must be a plain function" in out, out


def test_a_registry_table_a_function_writes_into_makes_the_router_unknown(tmp_path):
    """The one run-time lookup a module may hold reads a literal table; a computed entry put in
    it could reach any module's attribute, so the router's facts become unknown."""
    spec, files = _final_tree("signature_migration", 2, tmp_path)
    n = spec.oracle.n
    router = f"{n.core}/{n.router}.py"
    files[router] += '\n\ndef _poison():\n    ROUTES["x"] = ("built" + "ins", "set" + "attr", ())\n'
    write_repo(tmp_path, files)
    code, out = run_check(tmp_path, "python3 -B tools/check_api.py final")
    assert code == 1 and f"{router}:1: facts about this module" in out and "uses importlib" in out, out


@pytest.mark.parametrize(
    ("family", "tool", "module"),
    [
        ("batch_writes", "check_writes.py final", lambda n: f"{n.core}/{n.store}.py"),
        ("batch_writes", "check_writes.py hooks", lambda n: f"{n.core}/{n.store}.py"),
        ("record_upgrade", "check_records.py final", lambda n: f"{n.core}/{n.codec}.py"),
        ("extract_module", "check_imports.py final", lambda n: f"{n.app}/{n.util}.py"),
    ],
)
def test_every_family_fails_a_fact_it_cannot_read(family, tool, module, tmp_path):
    spec, files = _final_tree(family, 1, tmp_path)
    rel = module(spec.oracle.n)
    files[rel] += "\n\nfrom os.path import *\n"
    write_repo(tmp_path, files)
    code, out = run_check(tmp_path, f"python3 -B tools/{tool}")
    assert code == 1 and f"{rel}:1: facts about this module are read from its source" in out, out


@pytest.mark.parametrize(
    ("other", "named"),
    [
        ("from {core} import {client}\n\n{client}.{fn} = lambda url, *a: None\n", "writes an attribute {fn}"),
        ("def _later(m):\n    m.{fn} = None\n", "writes an attribute {fn}"),
        ("import sys\n", "uses sys, which can bind names of any module"),
    ],
)
def test_another_module_that_can_rebind_the_function_makes_its_facts_unknown(other, named, tmp_path):
    spec, files = _final_tree("signature_migration", 2, tmp_path)
    n = spec.oracle.n
    subs = {"core": n.core, "client": n.client, "fn": n.fn}
    files[f"{n.core}/_patch.py"] = other.format(**subs)
    write_repo(tmp_path, files)
    code, out = run_check(tmp_path, "python3 -B tools/check_api.py final")
    assert code == 1 and f"{n.core}/_patch.py:" in out and named.format(**subs) in out, out
