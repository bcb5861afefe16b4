# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compact path table the payload validator remembers members in, and what it costs."""


import tarfile
import tracemalloc

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.pathtable import PathTable
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.validator import PayloadValidator
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import as_member

KINDS = ('d', 'f', 'l', 'h')


def test_a_path_added_is_found_with_its_kind_and_others_are_absent():
    table = PathTable(KINDS)
    for kind in KINDS:
        assert table.add('home/agent/%s' % kind, kind) is True
    assert [table.get('home/agent/%s' % kind) for kind in KINDS] == list(KINDS)
    assert table.get('home/agent/x') is None
    assert 'home/agent/f' in table and 'home/agent' not in table
    assert len(table) == 4


def test_adding_a_path_again_keeps_its_first_kind():
    table = PathTable(KINDS)
    table.add('a', 'd')
    assert table.add('a', 'f') is False
    assert table.get('a') == 'd' and len(table) == 1


def test_every_path_is_still_found_after_the_table_grew_many_times():
    table = PathTable(KINDS, slots=8)
    paths = ['src/pkg%03d/mod%05d.py' % (number // 100, number) for number in range(20000)]
    for number, path in enumerate(paths):
        table.add(path, KINDS[number % 4])
    assert len(table) == len(paths)
    assert all(table.get(path) == KINDS[number % 4] for number, path in enumerate(paths))
    assert table.get('src/pkg000/mod20000.py') is None


def test_names_that_are_not_utf_8_and_the_empty_root_are_paths_like_any_other():
    table = PathTable(KINDS)
    table.add('', 'd')
    table.add('caf\udce9', 'f')
    assert table.get('') == 'd' and table.get('caf\udce9') == 'f' and table.get('café') is None


def test_the_table_takes_at_most_32_bytes_a_path():
    table = PathTable(KINDS)
    for number in range(100000):
        table.add('home/agent/f%06d' % number, 'f')
    assert table.nbytes <= 32 * len(table)


def test_two_tables_key_their_digests_differently():
    first, second = PathTable(KINDS), PathTable(KINDS)
    assert first._digest('home/agent') != second._digest('home/agent')


@pytest.mark.parametrize('kinds, slots', [(('a', 'b', 'c', 'd', 'e'), 8), (KINDS, 12)])
def test_more_than_four_kinds_or_a_size_that_is_not_a_power_of_two_is_refused(kinds, slots):
    with pytest.raises(ValueError):
        PathTable(kinds, slots=slots)


def members(count, per_directory=100):
    for name in ('.', './home', './home/agent', './home/agent/src'):
        info = tarfile.TarInfo(name)
        info.type = tarfile.DIRTYPE
        yield info
    for number in range(count):
        if number % per_directory == 0:
            info = tarfile.TarInfo('./home/agent/src/pkg%04d' % (number // per_directory))
            info.type = tarfile.DIRTYPE
            yield info
        yield tarfile.TarInfo('./home/agent/src/pkg%04d/module_%06d.py' % (number // per_directory, number))


def test_the_validator_keeps_at_most_40_bytes_a_member_however_many_it_has_seen():
    validator = PayloadValidator()
    tracemalloc.start()
    try:
        for info in members(60000):
            validator.feed(as_member(info))
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert validator.finish().members == 60604
    assert held <= 40 * 60604


def test_a_digest_collision_never_lets_a_member_sit_below_a_symbolic_link():
    validator = PayloadValidator()
    table = validator._kinds
    digest = table._digest

    def colliding(path):
        # The parent of the last member, never a member itself, shares the digest of a real directory.
        return digest('home/agent/d' if path == 'home/agent/link/sub' else path)

    table._digest = colliding
    for name, kind, target in (('.', tarfile.DIRTYPE, ''), ('./home', tarfile.DIRTYPE, ''), ('./home/agent', tarfile.DIRTYPE, ''),
                               ('./home/agent/d', tarfile.DIRTYPE, ''), ('./home/agent/link', tarfile.SYMTYPE, 'd')):
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = target
        validator.feed(as_member(info))
    assert table.get('home/agent/link/sub') == 'd'

    with pytest.raises(Tx9Error) as info:
        validator.feed(as_member(tarfile.TarInfo('./home/agent/link/sub/x')))

    assert info.value.cause == 'ARCHIVE_UNSAFE' and 'below the symbolic link "home/agent/link"' in info.value.reason
