# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' lists and mappings (other than box names) checked for their shape, never iterated as a string.

Private to the col_agents.tx9 collection. A role variable given on the command
line (`-e tx9_host_engine_config=live-restore=false`, `-e tx9_boxes=a,b`)
arrives as one string. Ansible's own check of a role's arguments lets such a
string through (it splits a list's string at its commas and reads a mapping's
`k=v` text) yet hands the role the string unchanged, which a loop then reads one
character at a time. shaped() refuses every such string with cause
INVALID_ARGUMENT, except for a list documented as comma-separated (its items
never hold a comma), which it splits.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

CAUSE = 'INVALID_ARGUMENT'
# list: a list of strings; entries: a list of names or mappings (tx9_boxes); dict: a mapping.
KINDS = ('list', 'entries', 'dict')


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + '...'


def _type_name(value: Any) -> str:
    """The plain type of a value (Ansible hands over its own subclasses of str, dict and list)."""
    for plain in (bool, int, float, str, dict, list, tuple):
        if isinstance(value, plain):
            return plain.__name__
    return type(value).__name__


def _how(variable: str, kind: str, commas: bool) -> str:
    if kind == 'dict':
        return (
            f'Give {variable} as a mapping: in YAML (group_vars, host_vars, a vars file), or on the command line '
            f'as JSON (-e \'{{"{variable}": {{"key": true}}}}\'); a key=value string is not read, its values '
            f'would all be strings.'
        )
    example = '["a", {"name": "b"}]' if kind == 'entries' else '["a", "b"]'
    fix = (
        f'Give {variable} as a list: in YAML (group_vars, host_vars, a vars file), or on the command line '
        f'as JSON (-e \'{{"{variable}": {example}}}\')'
    )
    return fix + (f', or as one string of items separated by commas (-e {variable}=a,b).' if commas else '.')


def _refused(value: Any, variable: str, kind: str, commas: bool) -> Tx9Error:
    wanted = 'a mapping' if kind == 'dict' else 'a list'
    return Tx9Error(
        f'{variable} is {_type_name(value)} {_shown(value)}, not {wanted}.', CAUSE, _how(variable, kind, commas)
    )


def _items(value: list[Any] | tuple[Any, ...], variable: str, kind: str) -> list[Any]:
    for index, item in enumerate(value):
        if isinstance(item, str) or (kind == 'entries' and isinstance(item, dict)):
            continue
        wanted = 'a string or a mapping' if kind == 'entries' else 'a string'
        raise Tx9Error(
            f'{variable}[{index}] is {_type_name(item)} {_shown(item)}, not {wanted}.',
            CAUSE,
            _how(variable, kind, False),
        )
    return list(value)


def shaped(value: Any, variable: str, kind: str = 'list', commas: bool = False) -> Any:
    """The value in its documented shape: a list (kind list or entries) or a mapping (kind dict); None is empty.

    commas: a string is split at its commas (a list whose items never hold a comma); otherwise refused.
    """
    if kind not in KINDS:
        raise ValueError(f'unknown shape {kind!r} (known: {", ".join(KINDS)})')
    if value is None:
        return {} if kind == 'dict' else []
    if kind == 'dict':
        if isinstance(value, dict):
            return value
        raise _refused(value, variable, kind, commas)
    if isinstance(value, str) and commas and kind == 'list':
        return [part.strip() for part in value.split(',') if part.strip()]
    if isinstance(value, (list, tuple)):
        return _items(value, variable, kind)
    raise _refused(value, variable, kind, commas)
