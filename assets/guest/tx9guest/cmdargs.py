# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Argument checks shared by the commands; anything unexpected is a UsageError."""

from __future__ import annotations

import re

from .errors import UsageError

# Who quiesced a box: one word, as the quiesce marker holds it.
WHO_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$')


def expect_no_args(command: str, args: list[str]) -> None:
    if args:
        raise UsageError(f"{command}: unexpected argument '{args[0]}'")


def parse_flags(command: str, args: list[str], known: set[str]) -> dict[str, bool]:
    found = {name: False for name in known}
    for arg in args:
        if arg not in known:
            raise UsageError(f"{command}: unexpected argument '{arg}'")
        found[arg] = True
    return found


def parse_option(command: str, args: list[str], name: str) -> str | None:
    """The value of `name VALUE` / `name=VALUE` (None when absent); nothing else is accepted."""
    if not args:
        return None
    if len(args) == 1 and args[0].startswith(name + '='):
        value = args[0].split('=', 1)[1]
    elif len(args) == 2 and args[0] == name:
        value = args[1]
    else:
        raise UsageError(f"{command}: unexpected argument '{args[0]}'")
    if not WHO_RE.match(value):
        raise UsageError(f"{command}: {name} takes a word of letters, digits, '.', '_' or '-'")
    return value
