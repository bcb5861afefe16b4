# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box options given as one `options` mapping. Private to the col_agents.tx9 collection.

A module that takes them both ways adds OPTIONS_ARG to its argument spec and
reads its parameters through with_box_options(): each key of `options` is a
box option, checked as the top-level option of that name is, and takes its
place. The top-level options stay for compatibility.
"""

from __future__ import annotations

from typing import Any

from ansible.module_utils.basic import _load_params
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits
from ansible_collections.col_agents.tx9.plugins.module_utils._box_option_spec import BOX_OPTIONS
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

OPTIONS_ARG = dict(options=dict(type='dict'))

# A key of `options` is validated as its top-level option, but gets no default: a key left out is not given.
KEY_SPEC = {key: {k: v for k, v in spec.items() if k != 'default'} for key, spec in BOX_OPTIONS.items()}


RESOURCE_KINDS = {option: kind for option, _key, kind in limits.RESOURCE_OPTIONS}


def _same(option: str, first: Any, second: Any) -> bool:
    """Whether two values of an option mean the same; limits and budgets compared as read (2 and '2.0' CPUs)."""
    if first == second or option not in RESOURCE_KINDS:
        return bool(first == second)
    try:
        kind = RESOURCE_KINDS[option]
        return limits.parse_option(option, kind, first, 0) == limits.parse_option(option, kind, second, 0)
    except Tx9Error:
        return False


def given_options() -> set[str]:
    """The names of the options the task gave itself, as opposed to those the argument spec defaulted."""
    return set(_load_params())


def with_box_options(params: dict[str, Any], given: set[str]) -> dict[str, Any]:
    """params with the keys of params['options'] in place of the top-level box options.

    given names the top-level options the task set; one of them set to another value than
    its key in `options` is refused, as is a key that is not a box option.
    """
    options = params.get('options')
    if not options:
        return params
    unknown = sorted(set(options) - set(BOX_OPTIONS))
    if unknown:
        verb = 'is' if len(unknown) == 1 else 'are'
        raise Tx9Error(
            f'options holds {", ".join(unknown)}, which {verb} no box option.',
            'INVALID_ARGUMENT',
            f'Give only box options in options: {", ".join(sorted(BOX_OPTIONS))}.',
        )
    checked = ArgumentSpecValidator(KEY_SPEC).validate(options)
    if checked.error_messages:
        raise Tx9Error(
            f'options is not valid: {"; ".join(checked.error_messages)}.',
            'INVALID_ARGUMENT',
            'Give each key of options a value its top-level option takes.',
        )
    values = {key: value for key, value in checked.validated_parameters.items() if key in options}
    clashes = sorted(
        key
        for key, value in values.items()
        if key in given and params.get(key) is not None and not _same(key, params[key], value)
    )
    if clashes:
        verb = 'is' if len(clashes) == 1 else 'are'
        raise Tx9Error(
            f'{", ".join(clashes)} {verb} given both as an option and in options, with different values.',
            'INVALID_ARGUMENT',
            'Give each box option once: as an option or as a key of options.',
        )
    merged = dict(params)
    merged.update(values)
    return merged
