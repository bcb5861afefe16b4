# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles' lists of names: a string where a list belongs is split at its commas, never iterated.

Private to the col_agents.tx9 collection. A role variable of box names given
on the command line (`-e tx9_backup_boxes=a,b`) arrives as one string; iterated
as it is, it would be one character after another, each "not on this host",
and the play would end green having done nothing. names() splits such a string
at its commas and refuses any other shape that is not a list of names.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

CAUSE = 'INVALID_ARGUMENT'


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + '...'


def names(value: Any, variable: str) -> list[str]:
    """A list of names from a list of strings, or from one comma-separated string; None is no names."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in value.split(',') if part.strip()]
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise Tx9Error(
                    f'{variable}[{index}] is {_shown(item)}, which is not a name.',
                    CAUSE,
                    f'Give {variable} as a list of names, or as one string of names separated by commas.',
                )
        return [item.strip() for item in value]
    raise Tx9Error(
        f'{variable} is {type(value).__name__} {_shown(value)}, not a list of names.',
        CAUSE,
        f'Give {variable} as a list of names (-e \'{{"{variable}": ["a", "b"]}}\'), or as one string of names '
        f'separated by commas (-e {variable}=a,b).',
    )
