# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box options the create_box playbook takes as variables of their own names (-e agent_memory=3g).

Private to the col_agents.tx9 collection. There is one list of them, CREATE_OPTIONS, derived from the
box options of tx9_box (module_utils._box_option_spec.BOX_OPTIONS): every one but those the tx9_box role sets
under variables of its own (ROLE_VARIABLES) and those that are no setting of a new box
(NOT_AT_CREATION). A box option added to the modules is thereby a variable of the playbook at once.

lookalikes() finds the variables given that look like a box option but are none (agent_memroy=,
memory=): the playbook would otherwise ignore them without a word.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box_option_spec import BOX_OPTIONS

# tx9_box options the tx9_box role sets from variables of its own (the playbook's -e names them so).
ROLE_VARIABLES = {'name': 'box_name', 'image': 'tx9_box_image', 'wait_timeout': 'tx9_box_wait_timeout'}
# tx9_box options that are no setting a person gives a new box: what to do with an existing one.
NOT_AT_CREATION = (
    'state',
    'recreate',
    'keep_data',
    'rotate_token',
    'quiesced',
    'superseded',
    'force',
    'clear_executor_config',
    'state_home',
    'options',
)
CREATE_OPTIONS = tuple(name for name in BOX_OPTIONS if name not in ROLE_VARIABLES and name not in NOT_AT_CREATION)
# The create_box playbook's other variables, and prefixes of the roles' and Ansible's own.
PLAYBOOK_VARIABLES = ('box_name', 'tx9_hosts', 'mounts')
OWN_PREFIXES = ('tx9_', 'ansible_')
# Words of option names that say nothing of which option is meant.
GENERIC_WORDS = frozenset(('agent', 'executor', 'web', 'base'))
MAX_SUGGESTIONS = 3
# How alike a name must be to an option to be its typo, and how far from the nearest another may be.
CLOSE = 0.75
NEAREST_MARGIN = 0.05


def options_from(variables: Mapping[str, Any]) -> dict[str, Any]:
    """The box options among variables: each of CREATE_OPTIONS that is defined and not null."""
    return {name: variables[name] for name in CREATE_OPTIONS if variables.get(name) is not None}


def _words(name: str) -> list[str]:
    return [word for word in name.lower().replace('-', '_').split('_') if len(word) >= 3]


def _closest(name: str) -> list[str]:
    """The options spelt nearly as name is (a typo), the nearest first; [] when none is near."""
    ratios = sorted(
        ((difflib.SequenceMatcher(None, name, option).ratio(), option) for option in CREATE_OPTIONS), reverse=True
    )
    best = ratios[0][0]
    return [option for ratio, option in ratios if ratio >= CLOSE and ratio >= best - NEAREST_MARGIN]


def suggestions(name: str) -> list[str]:
    """The variables a variable called name was likely meant to be; [] when it is one, or unlike any."""
    if name in CREATE_OPTIONS or name in PLAYBOOK_VARIABLES or name.startswith(OWN_PREFIXES):
        return []
    if name in ROLE_VARIABLES:
        return [ROLE_VARIABLES[name]]
    tails = [option for option in CREATE_OPTIONS if option.endswith('_' + name.lower())]
    if tails:
        return tails
    close = _closest(name.lower())
    if close:
        return close
    found = []
    for option in CREATE_OPTIONS:
        telling = [word for word in _words(option) if word not in GENERIC_WORDS]
        if any(word.startswith(part) or part.startswith(word) for part in _words(name) for word in telling):
            found.append(option)
    return found[:MAX_SUGGESTIONS]


def lookalikes(names: Iterable[str]) -> dict[str, list[str]]:
    """Each of names that looks like a box option but is none, with what it was likely meant to be."""
    return {name: found for name in sorted(set(names)) if (found := suggestions(name))}


def warning(name: str, meant: list[str]) -> str:
    """What a person reads about a variable that looks like a box option but is none."""
    return (
        f'The variable {name} is no box option of the create_box playbook and changes nothing; '
        f'did you mean {" or ".join(meant)}? The box options it takes: {", ".join(CREATE_OPTIONS)}.'
    )
