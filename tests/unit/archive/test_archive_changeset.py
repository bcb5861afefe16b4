# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Change sets: checked whole against the staged tree they apply to, and streamed for extraction."""


import io
import tarfile

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import changeset
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import envelope
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.tarheader import (
    DIRECTORY, HARDLINK, REGULAR, SYMLINK, Member)
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import (
    MTIME, directory, gz, hardlink, metadata_for, regular, sha256, symlink, tar_bytes, write_tx9)

BASE = sha256(b'the staged tree')
END_MARK = '.tx9-end-7f3a'


# Builders: a staged tree's file, and a change set written as a .tx9 container.

def sdir(path):
    return Member(path, DIRECTORY, mode=0o755)


def sfile(path, size=0):
    return Member(path, REGULAR, size=size)


def slink(path, target):
    return Member(path, SYMLINK, linkname=target)


def shard(path, target):
    return Member(path, HARDLINK, linkname=target)


STAGED_BASE = (sdir(''), sdir('home'), sdir('home/agent'))


def staged_tree(tmp_path, *members):
    """The file of a staged tree holding the root, home, home/agent, then members."""
    path = tmp_path / 'tree'
    with open(str(path), 'wb') as out:
        for each in STAGED_BASE + members:
            out.write(changeset.tree_record(each.name, each))
    return str(path)


def listing(paths):
    return b''.join(path.encode('utf-8') + b'\0' for path in paths)


def change_set_payload(paths, members, first=None):
    """gzip(tar): the list of paths (or the members of first instead), then the changed members."""
    if first is None:
        head = changeset.paths_member(paths if isinstance(paths, bytes) else listing(paths), MTIME)
        return gz(head + tar_bytes(members))
    return gz(tar_bytes(tuple(first) + tuple(members)))


def write_changes(tmp_path, paths, *members, first=None, changes=None, drop_changes=False, name='dev.tx9c'):
    """A change set on disk, its `changes` announcing what it holds unless changes overrides keys."""
    data = change_set_payload(paths, members, first)
    announced = changeset.changes_metadata_fields(
        BASE,
        paths.count(b'\0') if isinstance(paths, bytes) else len(paths),
        len(members),
        sum(info.size for info, unused in members),
    )
    announced.update(changes or {})
    meta = metadata_for(data, format=changeset.CHANGES_FORMAT)
    if not drop_changes:
        meta['changes'] = announced
    path = tmp_path / name
    write_tx9(path, data, meta)
    return str(path)


def read_changes(path):
    return envelope.read_archive(path, expected_format=changeset.CHANGES_FORMAT)


def check(tmp_path, tree, path):
    return changeset.check_changes(read_changes(path), None, None, tree, str(tmp_path / 'tree.new'))


def refused(tmp_path, tree, path, cause='ARCHIVE_UNSAFE'):
    with pytest.raises(Tx9Error) as info:
        check(tmp_path, tree, path)
    assert info.value.cause == cause, info.value.reason
    return info.value


def tree_of(path):
    return [(each.name, each.kind, each.size, each.linkname) for each in changeset.read_tree(path)]


# A legitimate change set.

LEGIT_STAGED = (
    sfile('home/agent/a.txt', 4),
    sfile('home/agent/gone.txt', 3),
    sdir('home/agent/olddir'),
    sfile('home/agent/olddir/x', 1),
    sdir('home/agent/olddir/sub'),
    sfile('home/agent/olddir/sub/y', 1),
    sdir('home/agent/d'),
    sfile('home/agent/d/keep', 5),
    slink('home/agent/link', 'a.txt'),
)
LEGIT_PATHS = ('home', 'home/agent', 'home/agent/a.txt', 'home/agent/new.txt', 'home/agent/d', 'home/agent/d/keep',
               'home/agent/link', 'home/agent/new-link')
LEGIT_MEMBERS = (
    regular('home/agent/a.txt', b'changed\n'),
    regular('./home/agent/new.txt', b'new\n'),
    directory('home/agent/d', mode=0o700),
    symlink('home/agent/link', 'd/keep'),
    hardlink('home/agent/new-link', 'home/agent/d/keep'),
)


@pytest.fixture
def legit(tmp_path):
    tree = staged_tree(tmp_path, *LEGIT_STAGED)
    return tree, write_changes(tmp_path, LEGIT_PATHS, *LEGIT_MEMBERS)


def test_a_change_set_that_changes_adds_and_removes_inside_the_tree_is_accepted_with_its_fields(tmp_path, legit):
    fields, unused, summary = check(tmp_path, *legit)

    assert (fields.base, fields.paths, fields.members, fields.bytes) == (BASE, 8, 5, 12)
    assert summary.as_dict() == dict(members=9, files=3, directories=4, symlinks=1, hardlinks=1, size=5 + 8 + 4)


def test_the_paths_to_remove_are_the_topmost_staged_paths_the_list_no_longer_holds(tmp_path, legit):
    removals = check(tmp_path, *legit)[1]

    assert removals == ['home/agent/gone.txt', 'home/agent/olddir']


def test_the_new_tree_holds_what_stays_then_the_changed_members_and_nothing_removed(tmp_path, legit):
    check(tmp_path, *legit)

    assert tree_of(str(tmp_path / 'tree.new')) == [
        ('', DIRECTORY, 0, ''),
        ('home', DIRECTORY, 0, ''),
        ('home/agent', DIRECTORY, 0, ''),
        ('home/agent/d', DIRECTORY, 0, ''),
        ('home/agent/d/keep', REGULAR, 5, ''),
        ('home/agent/a.txt', REGULAR, 8, ''),
        ('home/agent/new.txt', REGULAR, 4, ''),
        ('home/agent/link', SYMLINK, 0, 'd/keep'),
        ('home/agent/new-link', HARDLINK, 0, 'home/agent/d/keep'),
    ]


def test_the_new_tree_is_private_to_its_owner(tmp_path, legit):
    check(tmp_path, *legit)

    assert (tmp_path / 'tree.new').stat().st_mode & 0o777 == 0o600


def test_the_change_stream_is_a_tar_of_exactly_the_changed_members_then_the_end_mark_owned_as_asked(tmp_path, legit):
    unused, path = legit
    check(tmp_path, *legit)

    stream = changeset.ChangeStream(read_changes(path), None, None, 1000, 1001, END_MARK)
    data = b''.join(stream)
    stream.check()

    with tarfile.open(fileobj=io.BytesIO(data), mode='r:') as tar:
        members = tar.getmembers()
        shape = [(m.name, m.type, m.linkname, m.uid, m.gid) for m in members]
        contents = {m.name: tar.extractfile(m).read() for m in members if m.isreg()}
    assert shape == [
        ('home/agent/a.txt', tarfile.REGTYPE, '', 1000, 1001),
        ('home/agent/new.txt', tarfile.REGTYPE, '', 1000, 1001),
        ('home/agent/d', tarfile.DIRTYPE, '', 1000, 1001),
        ('home/agent/link', tarfile.SYMTYPE, 'd/keep', 1000, 1001),
        ('home/agent/new-link', tarfile.LNKTYPE, 'home/agent/d/keep', 1000, 1001),
        (END_MARK, tarfile.REGTYPE, '', 1000, 1001),
    ]
    assert contents == {'home/agent/a.txt': b'changed\n', 'home/agent/new.txt': b'new\n', END_MARK: b''}
    assert members[2].mode == 0o700


def test_a_change_stream_not_read_to_its_end_fails_its_check(tmp_path, legit):
    unused, path = legit
    stream = changeset.ChangeStream(read_changes(path), None, None, 1000, 1001, END_MARK)

    with pytest.raises(Tx9Error) as info:
        stream.check()
    assert info.value.cause == 'ARCHIVE_CORRUPT', info.value.reason


def test_a_change_set_that_changes_nothing_removes_nothing_and_keeps_the_tree(tmp_path):
    tree = staged_tree(tmp_path, sfile('home/agent/a.txt', 4))
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/a.txt'))

    removals = check(tmp_path, tree, path)[1]

    assert removals == []
    assert tree_of(str(tmp_path / 'tree.new')) == tree_of(tree)


def test_a_list_that_names_the_root_as_an_empty_path_and_counts_it_is_accepted(tmp_path):
    tree = staged_tree(tmp_path, sfile('home/agent/a.txt', 4))
    path = write_changes(tmp_path, ('', 'home', 'home/agent', 'home/agent/a.txt'))

    fields, removals, unused = check(tmp_path, tree, path)

    assert (fields.paths, removals) == (4, [])


# Staged hard links.

def test_a_staged_hard_link_whose_file_is_replaced_stays_in_the_new_tree_as_a_regular_file(tmp_path):
    tree = staged_tree(tmp_path, sfile('home/agent/f', 5), shard('home/agent/h', 'home/agent/f'))
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/f', 'home/agent/h'),
                         regular('home/agent/f', b'replaced\n'))

    removals = check(tmp_path, tree, path)[1]

    assert removals == []
    assert [(name, kind) for name, kind, unused, unused in tree_of(str(tmp_path / 'tree.new'))][3:] == [
        ('home/agent/h', REGULAR), ('home/agent/f', REGULAR)]


def test_a_staged_hard_link_whose_file_is_removed_stays_in_the_new_tree_as_a_regular_file(tmp_path):
    tree = staged_tree(tmp_path, sfile('home/agent/f', 5), shard('home/agent/h', 'home/agent/f'))
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/h'))

    removals = check(tmp_path, tree, path)[1]

    assert removals == ['home/agent/f']
    assert [(name, kind) for name, kind, unused, unused in tree_of(str(tmp_path / 'tree.new'))][3:] == [
        ('home/agent/h', REGULAR)]


# Crafted change sets: ARCHIVE_UNSAFE.

def test_a_member_below_a_symbolic_link_the_staged_tree_holds_is_refused(tmp_path):
    tree = staged_tree(tmp_path, sdir('home/agent/sub'), slink('home/agent/link', 'sub'))
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/sub', 'home/agent/link', 'home/agent/link/x'),
                         regular('home/agent/link/x', b'through the link\n'))

    err = refused(tmp_path, tree, path)

    assert err.details['member'] == 'home/agent/link/x'
    assert 'symbolic link "home/agent/link"' in err.reason


def test_a_hard_link_to_a_path_outside_the_root_is_refused(tmp_path):
    tree = staged_tree(tmp_path)
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/passwd'),
                         hardlink('home/agent/passwd', '../../etc/passwd'))

    assert 'leaves the root' in refused(tmp_path, tree, path).reason


@pytest.mark.parametrize('target, staged, rule', [
    ('home/agent/later', (), 'not an earlier member'),
    ('home/agent/d', (sdir('home/agent/d'),), 'not a regular file'),
    ('home/agent/s', (slink('home/agent/s', 'd'), sdir('home/agent/d')), 'not a regular file'),
])
def test_a_hard_link_to_a_path_that_is_not_an_earlier_regular_file_is_refused(tmp_path, target, staged, rule):
    tree = staged_tree(tmp_path, *staged)
    paths = ('home', 'home/agent', 'home/agent/h', 'home/agent/later') + tuple(each.name for each in staged)
    path = write_changes(tmp_path, paths, hardlink('home/agent/h', target), regular('home/agent/later', b'x'))

    err = refused(tmp_path, tree, path)

    assert err.details['member'] == 'home/agent/h'
    assert rule in err.reason


@pytest.mark.parametrize('announced', [dict(members=1), dict(bytes=5)])
def test_more_members_or_bytes_than_the_metadata_announces_are_refused(tmp_path, announced):
    tree = staged_tree(tmp_path)
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/a', 'home/agent/b'),
                         regular('home/agent/a', b'abc'), regular('home/agent/b', b'def'), changes=announced)

    err = refused(tmp_path, tree, path)

    assert 'its metadata announces' in err.reason
    assert err.details['member'] == 'home/agent/b'


def test_a_directory_turned_into_a_symbolic_link_with_children_after_it_is_refused(tmp_path):
    tree = staged_tree(tmp_path, sdir('home/agent/d'), sfile('home/agent/d/f', 1))
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/d', 'home/agent/d/f', 'home/agent/d/g'),
                         symlink('home/agent/d', '..'), regular('home/agent/d/g', b'g'))

    err = refused(tmp_path, tree, path)

    assert 'home/agent/d' in err.reason


def test_a_symbolic_link_whose_target_escapes_the_root_is_refused(tmp_path):
    tree = staged_tree(tmp_path)
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/esc'), symlink('home/agent/esc', '../../../etc'))

    err = refused(tmp_path, tree, path)

    assert err.details['member'] == 'home/agent/esc'
    assert 'leads out of the root' in err.reason


def test_a_member_named_twice_is_refused(tmp_path):
    tree = staged_tree(tmp_path)
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/a'),
                         regular('home/agent/a', b'one'), regular('./home/agent//a', b'two'))

    assert 'a second time' in refused(tmp_path, tree, path).reason


def test_a_change_set_whose_first_member_is_not_the_list_of_paths_is_refused(tmp_path):
    tree = staged_tree(tmp_path)
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/a'), regular('home/agent/a', b'a'), first=())

    err = refused(tmp_path, tree, path)

    assert err.details['member'] == 'home/agent/a'
    assert changeset.PATHS_MEMBER in err.reason


def test_a_list_of_paths_that_is_not_a_regular_file_is_refused(tmp_path):
    tree = staged_tree(tmp_path)
    path = write_changes(tmp_path, ('home', 'home/agent'), first=(directory(changeset.PATHS_MEMBER),))

    assert err_member(refused(tmp_path, tree, path)) == changeset.PATHS_MEMBER


def test_a_change_set_without_any_member_is_refused_for_its_missing_list(tmp_path):
    tree = staged_tree(tmp_path)
    path = write_changes(tmp_path, ('home', 'home/agent'), first=())

    assert 'is missing' in refused(tmp_path, tree, path).reason


@pytest.mark.parametrize('extra', [1, 2, 50])
def test_a_list_naming_more_paths_than_announced_is_refused(tmp_path, extra):
    tree = staged_tree(tmp_path)
    announced = ('home', 'home/agent', 'home/agent/a')
    more = tuple(f'home/agent/more-{index}' for index in range(extra))
    path = write_changes(tmp_path, announced + more, changes=dict(paths=len(announced)))

    err = refused(tmp_path, tree, path)

    assert err_member(err) == changeset.PATHS_MEMBER
    assert 'paths' in err.reason


def test_a_list_that_does_not_end_with_a_nul_is_refused(tmp_path):
    tree = staged_tree(tmp_path)
    path = write_changes(tmp_path, b'home\0home/agent', changes=dict(paths=2))

    err = refused(tmp_path, tree, path)

    assert err_member(err) == changeset.PATHS_MEMBER
    assert 'does not end with a NUL' in err.reason


def test_a_list_naming_a_path_longer_than_a_path_may_be_is_refused(tmp_path):
    tree = staged_tree(tmp_path)
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/' + 'x' * changeset.PATH_MAX))

    assert 'longer than' in refused(tmp_path, tree, path).reason


def test_a_staged_path_the_list_keeps_but_a_removed_directory_held_is_refused_as_orphaned(tmp_path):
    tree = staged_tree(tmp_path, sdir('home/agent/d'), sfile('home/agent/d/f', 1))
    path = write_changes(tmp_path, ('home', 'home/agent', 'home/agent/d/f'))

    err = refused(tmp_path, tree, path)

    assert err_member(err) == 'home/agent/d/f'


def err_member(err):
    return err.details['member']


# The metadata: ARCHIVE_INVALID.

def test_a_change_set_whose_metadata_has_no_changes_object_is_invalid(tmp_path):
    tree = staged_tree(tmp_path)
    path = write_changes(tmp_path, ('home', 'home/agent'), drop_changes=True)

    assert '"changes"' in refused(tmp_path, tree, path, 'ARCHIVE_INVALID').reason


@pytest.mark.parametrize('changes', [
    dict(base='abc'),
    dict(base=BASE.upper()),
    dict(base=BASE + '0'),
    dict(base=None),
    dict(paths=-1),
    dict(members='1'),
    dict(bytes=True),
    dict(members=changeset.MAX_MEMBERS + 1),
])
def test_a_change_set_whose_changes_object_is_malformed_is_invalid(tmp_path, changes):
    tree = staged_tree(tmp_path)
    path = write_changes(tmp_path, ('home', 'home/agent'), changes=changes)

    refused(tmp_path, tree, path, 'ARCHIVE_INVALID')


def test_a_tx9_archive_read_as_a_change_set_is_refused(tmp_path):
    tx9 = tmp_path / 'dev.tx9'
    write_tx9(tx9, gz(tar_bytes((directory('.'), directory('home'), directory('home/agent')))))

    with pytest.raises(Tx9Error) as info:
        read_changes(str(tx9))
    assert info.value.cause == 'ARCHIVE_INVALID', info.value.reason
    assert changeset.CHANGES_FORMAT in info.value.reason


def test_a_change_set_read_as_a_tx9_archive_is_refused(tmp_path):
    path = write_changes(tmp_path, ('home', 'home/agent'))

    with pytest.raises(Tx9Error) as info:
        envelope.read_archive(path)
    assert info.value.cause == 'ARCHIVE_INVALID', info.value.reason
    assert changeset.CHANGES_FORMAT in info.value.reason


# The staged tree's file.

def test_a_staged_tree_reads_back_record_by_record_with_names_that_are_not_utf8(tmp_path):
    odd = 'home/agent/caf\udce9'
    tree = staged_tree(tmp_path, sfile(odd, 7), slink('home/agent/l', odd.rpartition('/')[2]),
                       shard('home/agent/h', odd))

    assert tree_of(tree)[3:] == [(odd, REGULAR, 7, ''), ('home/agent/l', SYMLINK, 0, 'caf\udce9'),
                                 ('home/agent/h', HARDLINK, 0, odd)]


def test_a_staged_tree_cut_inside_a_record_is_refused(tmp_path):
    tree = staged_tree(tmp_path, sfile('home/agent/a', 1))
    with open(tree, 'ab') as out:
        out.write(b'f3\0home/agent/b')

    with pytest.raises(ValueError):
        list(changeset.read_tree(tree))
