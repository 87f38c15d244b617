"""The task repositories' text, written as jinja2 templates (docs/design.md §8).

Each family keeps its templates in `tasks/<family>/templates/`, what families share in
`tasks/common/templates/`; a template is named by its folder's family, e.g.
`render("batch_writes/store.py.j2", n=n)`. The family's Python draws every seeded value and
hands it over, so a template holds text only and the rng is drawn in the same order as ever.

StrictUndefined: a name a template uses and is not given is an error, never an empty string
in a generated file. `trim_blocks`/`lstrip_blocks`: a line holding only a `{% ... %}` tag
leaves nothing in the output, and `keep_trailing_newline` keeps a file's last newline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

TASKS = Path(__file__).resolve().parents[1]

ENV = jinja2.Environment(
    loader=jinja2.PrefixLoader(
        {folder.parent.name: jinja2.FileSystemLoader(folder) for folder in sorted(TASKS.glob("*/templates"))}
    ),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=True,
    lstrip_blocks=True,
    autoescape=False,
    auto_reload=False,
)  # the package's templates never change under a running process
ENV.filters["repr"] = repr


def render(name: str, **values: Any) -> str:
    """The text of template `name` ("<family>/<file>") with `values`."""
    return ENV.get_template(name).render(**values)


def snippet(name: str, macro: str, *args: Any, **kwargs: Any) -> str:
    """The text of `macro` of template `name`: a function or a section a step's edit adds."""
    return str(getattr(ENV.get_template(name).module, macro)(*args, **kwargs))
