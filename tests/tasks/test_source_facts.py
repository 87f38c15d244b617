"""Facts about the code are read from its source (tasks/common/walker.py FACTS; issue 42 item 3):
an object that says what the check wants about itself (`__code__`, `__name__`) no longer passes a
check tool, while asking the object, as the tools did, is fooled by it."""

from __future__ import annotations

import subprocess
import sys

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
    files[client] = files[client].replace(f"def {n.fn}(url, policy):", f"def {n.fn}(url, {n.t}, {n.r}):") \
        + LIAR.format(fn=n.fn)
    write_repo(tmp_path, files)
    code, out = run_check(tmp_path, "python3 -B tools/check_api.py final")
    assert code == 1 and f"{n.fn} must be a plain function taking exactly (url, policy)" in out, out
    # Asking the object, as the tool did before: the lie passes.
    asked = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
                            f"from {n.core} import {n.client} as c; code = c.{n.fn}.__code__; "
                            "print(code.co_argcount - code.co_posonlyargcount)"],
                           capture_output=True, text=True, check=True)
    assert asked.stdout.strip() == "2"


def test_hooks_named_in_order_by_their_objects_but_not_in_the_source_fail(tmp_path):
    spec, files = _final_tree("batch_writes", 1, tmp_path)
    n = spec.oracle.n
    store = f"{n.core}/{n.store}.py"
    a, b, z = n.chain
    # the hooks run in another order; each function renamed so that `__name__` reads as the chain
    files[store] = files[store].replace(f"{n.hooks} = ({a}, {b}, {z})", f"{n.hooks} = ({b}, {a}, {z})") + (
        f"\n\n{a}.__name__, {b}.__name__ = {b!r}, {a!r}\n")
    write_repo(tmp_path, files)
    code, out = run_check(tmp_path, "python3 -B tools/check_writes.py hooks")
    assert code == 1 and f"runs ('{b}', '{a}', '{z}')" in out, out
