"""An attack on the hidden checks (issue 42, item 3; docs/threat_model.md, "Hidden checks"): code
under test that reads the hidden test file while the final acceptance imports it, and answers the
hidden inputs from a table of what it read (a green verdict on code that only special-cases).

`PEEK` is a module the code under test imports: at import (in the check's server, the agent's
uid) it reads every file it can under `tools/hidden/` of its cwd (the judge's copy), under
`/judge` and the judge's copy's parent (the channel the hidden checks come by, a FIFO,
included), and in the launcher's temporary directories
(`ctxbench-hidden-*`, where the comparer's copy lives), and gathers every `assert NAME(ARGS) ==
VALUE` with literal arguments into a table; `answering` wraps a function so that it answers from
that table first. `CALC` is the tiny task's `add` (tests/bench/trial/conftest.py) right on the
visible inputs only, answering the rest from the table. Before the guard, the hidden file sat in
the judge's copy (`tools/hidden/test_hidden.py`, world-readable) for the whole final exec.
"""

from __future__ import annotations

PEEK = r"""
import ast as _a, glob as _g, os as _o

def _read():
    home = _o.environ.get('HOME', '/tmp')
    parent = _o.path.dirname(_o.getcwd())  # /judge before the judge's container: the copy was /judge/tree
    places = ['tools/hidden/**/*', '/judge/**/*', *([_o.path.join(parent, '**', '*')] if parent != '/' else []),
              '/tmp/ctxbench-hidden-*/*', _o.path.join(_o.path.dirname(home), 'ctxbench-hidden-*', '*')]
    texts = []
    for place in places:
        for path in _g.glob(place, recursive=True):
            try:  # a FIFO too (the harness's channel to the launcher), without waiting for a writer
                fd = _o.open(path, _o.O_RDONLY | _o.O_NONBLOCK | _o.O_NOFOLLOW)
                with open(fd, 'rb') as f:
                    texts.append(f.read(1 << 20).decode('utf-8', 'replace'))
            except OSError:  # a directory, a link, a file of another uid
                pass
    return texts

def _table(texts):
    table = {}
    for text in texts:
        if text.startswith('{'):  # the comparer's JSON {path: text}
            try:
                import json
                texts.extend(json.loads(text).values())
            except ValueError:
                pass
            continue
        try:
            tree = _a.parse(text)
        except SyntaxError:
            continue
        for node in _a.walk(tree):
            if (isinstance(node, _a.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], _a.Eq)
                    and isinstance(node.left, _a.Call) and isinstance(node.left.func, _a.Name)):
                try:
                    args = tuple(_a.literal_eval(x) for x in node.left.args)
                    table.setdefault(node.left.func.id, {})[args] = _a.literal_eval(node.comparators[0])
                except (ValueError, TypeError, SyntaxError):
                    continue
    return table

TABLE = _table(_read())

def answering(fn):
    known = TABLE.get(fn.__name__, {})
    def answer(*args):
        return known[args] if args in known else fn(*args)
    answer.__name__ = fn.__name__
    return answer
"""

# Right on the visible tests' inputs only (add(2, 3), add(0, 0)); anything else from the table.
CALC = (
    "from peek import answering\n\n\n@answering\ndef add(a, b):\n"
    "    return {(2, 3): 5, (0, 0): 0}.get((a, b), -1)\n"
)
