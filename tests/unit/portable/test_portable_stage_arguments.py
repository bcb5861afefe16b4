# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_stage refuses a journal with no step to record and a resume no journal precedes, never ignoring them."""

from __future__ import annotations

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.modules.tx9_stage import refuse_unused

JOURNAL = dict(path='~/.tx9/migrate/dev/journal.json', record=dict(box='dev'))


def params(**given):
    return dict(dict(state='present', base=None, changes=None, journal=None, resume=False), **given)


@pytest.mark.parametrize('given, named', [
    (dict(state='absent', journal=JOURNAL), 'state=absent'),
    (dict(base='/tmp/dev.tx9', journal=JOURNAL), 'base'),
])
def test_a_journal_given_where_no_step_is_recorded_is_an_invalid_argument_naming_why(given, named):
    with pytest.raises(Tx9Error) as info:
        refuse_unused(params(**given))

    assert info.value.cause == 'INVALID_ARGUMENT'
    assert f'journal was given with {named}' in info.value.reason


@pytest.mark.parametrize('given', [
    dict(state='promoted', resume=True),
    dict(changes='/tmp/dev.tx9c', journal=JOURNAL, resume=True),
])
def test_a_resume_without_a_promotion_that_writes_the_journal_is_an_invalid_argument(given):
    with pytest.raises(Tx9Error) as info:
        refuse_unused(params(**given))

    assert info.value.cause == 'INVALID_ARGUMENT'
    assert 'tx9_box quiesced=false' in info.value.fix


@pytest.mark.parametrize('given', [
    dict(changes='/tmp/dev.tx9c', journal=JOURNAL),
    dict(state='promoted', journal=JOURNAL, resume=True),
    dict(state='promoted', changes='/tmp/dev.tx9c', journal=JOURNAL, resume=True),
    dict(base='/tmp/dev.tx9'),
    dict(state='absent'),
])
def test_the_options_a_move_gives_together_are_accepted(given):
    assert refuse_unused(params(**given)) is None
