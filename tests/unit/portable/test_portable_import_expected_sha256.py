# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_import's archive_sha256 option, as given: what is accepted and what is refused."""


import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import expected_sha256

DIGEST = 'ab' * 32


def test_no_archive_sha256_asks_for_no_whole_file_check():
    assert expected_sha256(None) is None


def test_an_archive_sha256_in_capitals_or_with_spaces_around_it_is_taken_in_lower_case():
    assert expected_sha256('  %s\n' % DIGEST.upper()) == DIGEST


@pytest.mark.parametrize('value', ['', 'ab' * 31, 'ab' * 33, 'zz' * 32, 'sha256:' + DIGEST])
def test_an_archive_sha256_that_is_not_64_hex_digits_is_an_invalid_argument(value):
    with pytest.raises(Tx9Error) as info:
        expected_sha256(value)
    assert info.value.cause == 'INVALID_ARGUMENT' and 'archive_sha256' in info.value.reason
