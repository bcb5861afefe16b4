# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's list of box names given as one string is split at its commas, never read a character at a time."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.filter.names import names


def test_a_comma_separated_string_is_the_list_of_names_it_spells():
    assert names('nu-beta,nu-gamma', 'tx9_backup_boxes') == ['nu-beta', 'nu-gamma']
    assert names(' nu-beta , ,nu-gamma ', 'tx9_backup_boxes') == ['nu-beta', 'nu-gamma']
    assert names('nu-beta', 'tx9_backup_boxes') == ['nu-beta']


def test_a_list_stays_the_list_and_nothing_is_no_names():
    assert names(['a', ' b'], 'tx9_backup_boxes') == ['a', 'b']
    assert names([], 'tx9_backup_boxes') == [] and names(None, 'tx9_backup_boxes') == [] and names('', 'x') == []


@pytest.mark.parametrize('value, said', [
    ({'name': 'a'}, 'tx9_upgrade_boxes is dict'), (7, 'tx9_upgrade_boxes is int'),
    (['a', 3], 'tx9_upgrade_boxes[1] is 3'), (['a', ''], "tx9_upgrade_boxes[1] is ''"),
])
def test_any_other_shape_is_refused_naming_the_variable_and_how_to_write_it(value, said):
    with pytest.raises(AnsibleFilterError) as caught:
        names(value, 'tx9_upgrade_boxes')
    assert said in str(caught.value) and 'INVALID_ARGUMENT' in str(caught.value)
    assert 'separated by commas' in str(caught.value)
