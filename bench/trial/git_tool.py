"""What the agent's `git` tool may pass to host git: an allow-list, never a deny-list
(docs/threat_model.md). Host git runs on the host, as the harness's user: an option that
names a path (`-O<file>`, `--output=`, `--git-dir=`, `-C`, `--exec-path`, `--no-index`), runs
a program (`--ext-diff`, `--textconv`) or reads another repository would reach the host. So
an argument is passed only if it is

* an option of the subcommand's list, exactly (`--stat`), or matching its value pattern
  (`-n5`, `--format=%h %s`): values are attached, never a separate argument, and no value
  pattern admits a path;
* a revision or a pathspec: no leading `-` or `/`, printable, short;
* anything after `--`: a pathspec, under the same rule but for the leading `-`.

Anything else is refused before git runs (a tool error naming the argument). And every operand
(a revision or a pathspec, `operands`) must name the working copy or a path in it however
spelt, `..` and symlinks resolved (bench/trial/tools.py, `Tools._inside`): `git diff A B` with
a path outside the work tree (`../../etc/passwd`) is, by git's own rule, `diff --no-index`,
which opens host files as the harness's user. Git decides "outside" lexically
(`path_inside_repo`), the harness lexically and through symlinks, so --no-index never starts.
Git also reads paths inside an operand: after pathspec magic (`:(top)/abs`, `:!../x`) and in
revision syntax (`HEAD:/abs`, `HEAD:../x`), and stats them. Rather than copy git's parsers,
every part of an operand git may read as a path (`path_readings`: the whole, and whatever
follows a `:` or `)`, exclusion marks dropped) must be a relative path inside the copy.
"""

from __future__ import annotations

import re

SUBCOMMANDS = ("status", "log", "diff", "show")
_TEXT = r"[\x20-\x7e]{1,200}"  # printable ASCII: a format, a date, an author, a regex
_SUMMARY = {
    "--stat",
    "--shortstat",
    "--numstat",
    "--name-only",
    "--name-status",
    "--summary",
    "--raw",
    "--patch",
    "-p",
    "--no-patch",
    "-s",
    "--no-renames",
    "--no-color",
    "--compact-summary",
}
_DIFF = _SUMMARY | {
    "--cached",
    "--staged",
    "-R",
    "-w",
    "--ignore-all-space",
    "-b",
    "--ignore-space-change",
    "--ignore-blank-lines",
    "--minimal",
    "--patience",
    "--histogram",
    "--check",
    "--word-diff",
    "--exit-code",
    "--quiet",
}
_LOG = _SUMMARY | {
    "--oneline",
    "--reverse",
    "--graph",
    "--decorate",
    "--no-decorate",
    "--all",
    "--first-parent",
    "--no-merges",
    "--merges",
    "--abbrev-commit",
    "--no-abbrev-commit",
    "--follow",
    "--date-order",
    "--topo-order",
    "--full-history",
}
_DIFF_VALUES = (
    r"-U[0-9]{1,4}",
    r"--unified=[0-9]{1,4}",
    r"--diff-filter=[ACDMRTUXBacdmrtuxb*]{1,16}",
    r"-M(?:[0-9]{1,3}%?)?",
    r"--find-renames(?:=[0-9]{1,3}%?)?",
    r"--stat=[0-9]{1,4}(?:,[0-9]{1,4}){0,2}",
    r"--word-diff=(?:plain|porcelain|none)",
    r"--inter-hunk-context=[0-9]{1,4}",
    r"--dirstat(?:=[a-z0-9,]{1,40})?",
    r"--abbrev=[0-9]{1,2}",
)
# `%G...` verifies a signature with gpg: a program, not a format.
_LOG_VALUES = (
    r"-n[0-9]{1,6}",
    r"-[0-9]{1,6}",
    r"--max-count=[0-9]{1,6}",
    r"--skip=[0-9]{1,6}",
    rf"--(?:format|pretty)=(?!.*%G){_TEXT}",
    rf"--(?:since|until|after|before|author|committer|grep)={_TEXT}",
    r"--date=(?:relative|local|iso|iso-strict|rfc|short|raw|default|unix)",
)
_STATUS = {
    "--short",
    "-s",
    "--branch",
    "-b",
    "--porcelain",
    "--long",
    "--ignored",
    "--no-renames",
    "-uno",
    "-unormal",
    "-uall",
    "--untracked-files=no",
    "--untracked-files=normal",
    "--untracked-files=all",
}
FLAGS = {
    "status": _STATUS,
    "diff": _DIFF,
    "log": _LOG,
    "show": _LOG | _DIFF - {"--cached", "--staged", "--exit-code", "--quiet", "--check"},
}
VALUES = {
    sub: re.compile("|".join(f"(?:{p})" for p in pats))
    for sub, pats in {
        "status": (),
        "diff": _DIFF_VALUES,
        "log": _LOG_VALUES + _DIFF_VALUES,
        "show": _LOG_VALUES + _DIFF_VALUES,
    }.items()
    if pats
}
_OPERAND = re.compile(r"[^\x00-\x1f\x7f]{1,500}")


def _attach_counts(subcommand: str, args: list[str]) -> list[str]:
    """`-n 5` as `-n5`: the one option agents habitually give a separate value (git log -n 5),
    and a value of digits only, which can name no path."""
    if subcommand not in ("log", "show"):
        return args
    out: list[str] = []
    i = 0
    while i < len(args):
        if args[i] == "-n" and i + 1 < len(args) and isinstance(args[i + 1], str) and args[i + 1].isdigit():
            out.append(f"-n{args[i + 1]}")
            i += 2
        else:
            out.append(args[i])
            i += 1
    return out


def refusal(subcommand: str, args: list[str]) -> str | None:
    """Why `git <subcommand> <args>` may not run on the host, or None if every part may."""
    if subcommand not in SUBCOMMANDS:
        return f"git {subcommand!r}: the git tool runs only {', '.join(SUBCOMMANDS)}"
    values = VALUES.get(subcommand)
    pathspecs = False
    args = _attach_counts(subcommand, args)
    for arg in args:
        if not isinstance(arg, str) or not _OPERAND.fullmatch(arg) or arg.startswith("/"):
            return f"git argument {arg!r:.80} not allowed: revisions and paths are repo-relative, printable, short"
        if pathspecs or not arg.startswith("-"):
            continue
        if arg == "--":
            pathspecs = True
        elif arg not in FLAGS[subcommand] and not (values is not None and values.fullmatch(arg)):
            return (
                f"git {subcommand} option {arg!r:.80} is not allowed (options that name files, run programs "
                f"or reach other repositories never are); allowed: {' '.join(sorted(FLAGS[subcommand]))}, "
                "-n<N>, -U<N>, --format=..., --since=..."
            )
    return None


def path_readings(operand: str) -> list[str]:
    """Every part of `operand` git may read as a path: the whole, and each rest after a `:`
    or a `)` (pathspec magic, `REV:path`), without leading exclusion marks (`!`, `^`)."""
    cuts = [0] + [i + 1 for i, ch in enumerate(operand) if ch in ":)"]
    return list(dict.fromkeys(operand[i:].lstrip("!^") for i in cuts))


def operands(subcommand: str, args: list[str]) -> list[str]:
    """The arguments `refusal` let through that are not options: revisions and pathspecs."""
    out: list[str] = []
    pathspecs = False
    for arg in _attach_counts(subcommand, args):
        if pathspecs or not arg.startswith("-"):
            out.append(arg)
        elif arg == "--":
            pathspecs = True
    return out
