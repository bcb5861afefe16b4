# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The payload validator: what passes, and a malicious corpus that must not.

The corpus is built here, in code, after the public descriptions of CPython's
tarfile-filter CVEs (2024-12718, 2025-4138, 2025-4330, 2025-4517), jwilk's
traversal archives and libarchive's secure-extraction tests; every rule of
the format's "What a valid payload may contain" has a case.
"""


import io
import os
import subprocess
import tarfile

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import tarheader
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import validator
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import (
    BASE, as_member, directory, gz, hardlink, member, payload, realpath_limit_members, refused, regular, symlink, tar_bytes, validate)


# What passes.

def test_a_box_payload_with_nested_dirs_links_unicode_and_an_executable_passes_and_is_counted():
    data = payload(
        directory('./home/agent/projects'),
        directory('./home/agent/projects/app'),
        regular('./home/agent/projects/app/main.py', b'print(1)\n'),
        regular('./home/agent/run.sh', b'#!/bin/sh\necho hi\n', mode=0o755),
        regular('./home/agent/Übung – 日本語.txt', 'grüße'.encode('utf-8')),
        symlink('./home/agent/current', 'projects/app'),
        symlink('./home/agent/entry', 'current/main.py'),
        symlink('./home/agent/self', '../agent/run.sh'),
        hardlink('./home/agent/run-again.sh', './home/agent/run.sh'),
        regular('./home/agent/empty'),
    )

    summary = validate(data)

    assert summary.as_dict() == dict(members=13, files=4, directories=5, symlinks=3, hardlinks=1,
                                     size=len(b'print(1)\n') + len(b'#!/bin/sh\necho hi\n') + len('grüße'.encode('utf-8')))


def test_names_without_the_dot_slash_prefix_pass():
    data = gz(tar_bytes([directory('home'), directory('home/agent'), regular('home/agent/notes.md', b'x')]))

    assert validate(data).members == 3


def test_a_payload_without_a_root_entry_passes_because_the_root_is_the_extraction_directory():
    data = gz(tar_bytes([directory('./home'), directory('./home/agent')]))

    assert validate(data).directories == 2


def test_a_payload_made_by_tar_from_a_real_directory_passes(tmp_path):
    root = tmp_path / 'data'
    (root / 'home' / 'agent' / '.config').mkdir(parents=True)
    (root / 'home' / 'agent' / '.config' / 'settings.json').write_text('{}')
    (root / 'home' / 'agent' / 'bin').mkdir()
    (root / 'home' / 'agent' / 'bin' / 'tool').write_text('#!/bin/sh\n')
    os.chmod(str(root / 'home' / 'agent' / 'bin' / 'tool'), 0o755)
    os.symlink('bin/tool', str(root / 'home' / 'agent' / 'tool'))
    os.link(str(root / 'home' / 'agent' / 'bin' / 'tool'), str(root / 'home' / 'agent' / 'tool-copy'))

    data = subprocess.run(['tar', '-czf', '-', '-C', str(root), '.'], check=True, stdout=subprocess.PIPE).stdout

    summary = validate(data)
    assert (summary.members, summary.symlinks, summary.hardlinks) == (9, 1, 1)


def test_a_dangling_relative_symlink_inside_the_root_passes():
    # Lock files of browsers and editors point at names that do not exist.
    assert validate(payload(symlink('./home/agent/lock', 'host-1234'))).symlinks == 1


def test_a_symlink_to_the_root_itself_passes():
    assert validate(payload(symlink('./home/agent/top', '../..'))).symlinks == 1


def test_a_symlink_resolves_through_other_links_where_they_really_lead():
    data = payload(
        directory('./home/agent/a'),
        directory('./home/agent/a/b'),
        symlink('./home/agent/deep', 'a/b'),
        # deep/.. is a (where deep leads, then up), not home/agent.
        symlink('./home/agent/up', 'deep/../b/../..'),
    )

    assert validate(data).symlinks == 2


def test_a_link_pointing_at_a_later_member_passes():
    data = payload(symlink('./home/agent/later', 'file'), regular('./home/agent/file', b'x'))

    assert validate(data).members == 5


def test_a_member_may_come_before_its_parent_directory():
    data = payload(regular('./home/agent/d/f', b'x'), directory('./home/agent/d'))

    assert validate(data).files == 1


def test_a_chain_of_exactly_the_allowed_hops_passes_and_one_more_is_refused():
    chain = [symlink('./home/agent/l%d' % i, 'l%d' % (i + 1)) for i in range(4)] + [regular('./home/agent/l4', b'x')]

    assert validate(payload(*chain), max_hops=4).symlinks == 4
    err = refused(payload(*chain), max_hops=3)
    assert '"./home/agent/l0"' in err.reason and 'more than 3 hops' in err.reason


def test_the_real_hop_limit_is_forty():
    chain = [symlink('./home/agent/l%d' % i, 'l%d' % (i + 1)) for i in range(41)]

    assert validate(payload(*chain[1:])).symlinks == 40
    assert 'more than 40 hops' in refused(payload(*chain)).reason


def test_a_hard_link_target_is_normalised_before_it_is_looked_up():
    data = payload(regular('./home/agent/f', b'x'), hardlink('home//agent/./g', 'home/agent//./f'))

    assert validate(data).hardlinks == 1


def test_exactly_the_member_limit_passes_and_one_more_is_refused():
    files = [regular('./home/agent/f%d' % i) for i in range(3)]

    assert validate(payload(*files), max_members=6).members == 6
    err = refused(payload(*files), max_members=5)
    assert '"./home/agent/f2"' in err.reason and '5 members' in err.reason


def test_a_gzip_of_several_members_passes():
    raw = tar_bytes(BASE)

    assert validate(gz(raw[:1024]) + gz(raw[1024:])).members == 3


def test_names_that_are_not_utf8_pass_and_are_shown_escaped():
    info, data = regular('./home/agent/x')
    raw = bytearray(tar_bytes(BASE + ((info, data),), fmt=tarfile.USTAR_FORMAT))
    at = raw.index(b'./home/agent/x')
    raw[at + len(b'./home/agent/'):at + len(b'./home/agent/x')] = b'\xff'
    # The header checksum must follow the edited name.
    header = at - at % 512
    raw[header + 148:header + 156] = b' ' * 8
    raw[header + 148:header + 155] = ('%06o\0' % sum(raw[header:header + 512])).encode('ascii')

    assert validate(gz(bytes(raw))).files == 1
    assert tarheader.shown('a\udcffb\x1b') == 'a\\xffb\\x1b'


def test_the_validator_reads_an_uncompressed_tar_too():
    summary = validator.validate_stream(io.BytesIO(tar_bytes(BASE)), compressed=False)

    assert summary.members == 3


def test_feed_and_finish_validate_members_a_caller_parses_itself():
    check = validator.PayloadValidator()
    for info, _data in BASE + (symlink('./home/agent/l', 'later'), regular('./home/agent/later', b'x')):
        check.feed(as_member(info))

    assert check.finish().members == 5


def test_feed_refuses_at_the_first_bad_member_before_the_rest_is_read():
    check = validator.PayloadValidator()
    check.feed(as_member(directory('.')[0]))

    with pytest.raises(Exception) as info:
        check.feed(as_member(regular('../escape')[0]))
    assert info.value.cause == 'ARCHIVE_UNSAFE'


def test_the_first_violation_is_the_one_reported():
    err = refused(payload(regular('/abs'), regular('../up')))

    assert '"/abs"' in err.reason and '../up' not in err.reason


# Names.

@pytest.mark.parametrize('name, shown', [
    ('home/agent/a\nb', 'a\\x0ab'),
    ('home/agent/\x1b[31mred', '\\x1b[31mred'),
    ('home/agent/del\x7f', 'del\\x7f'),
    ('home/agent/csi\x9b', 'csi\\x9b'),
], ids=['newline', 'escape', 'delete', 'c1-control'])
def test_a_name_with_a_control_character_is_refused(name, shown):
    err = refused(payload(regular(name)))

    assert shown in err.reason and 'control character' in err.reason


def test_a_name_with_a_nul_hidden_in_a_pax_header_is_refused():
    err = refused(payload(member('./home/agent/x', pax={'path': 'home/agent/ok\x00/../../../../etc/passwd'})))

    assert '"./home/agent/x"' in err.reason and 'holding a NUL' in err.reason


def test_an_empty_name_is_refused():
    assert 'empty name' in refused(payload(regular(''))).reason


@pytest.mark.parametrize('name', ['/tmp/moo', '//tmp/moo', '/home/agent/.bashrc'],
                         ids=['absolute', 'double-slash', 'absolute-home'])
def test_an_absolute_name_is_refused(name):
    err = refused(payload(regular(name, b'x')))

    assert '"%s"' % name in err.reason and 'absolute' in err.reason


@pytest.mark.parametrize('name', ['../moo', '../../../../../../../../tmp/moo', './home/agent/../../../outside',
                                  'home/agent/..', 'home/agent/x/../../../../y'],
                         ids=['parent', 'deep-parent', 'dot-dot-inside-path', 'trailing-dot-dot', 'dot-dot-after-dirs'])
def test_a_name_with_a_dot_dot_component_is_refused(name):
    err = refused(payload(regular(name, b'x')))

    assert '"%s"' % name in err.reason and '".."' in err.reason


def test_a_name_that_repeats_another_after_normalisation_is_refused():
    err = refused(payload(regular('./home/agent/f', b'1'), regular('home//agent/./f', b'2')))

    assert '"home//agent/./f"' in err.reason and 'second time' in err.reason


def test_a_second_root_entry_is_refused():
    assert 'second time' in refused(gz(tar_bytes(BASE + (directory('./'),)))).reason


def test_a_repeated_directory_that_would_change_its_mode_is_refused():
    # CVE-2024-12718: a later entry for an existing path re-applies its mode.
    err = refused(payload(directory('./home/agent/d', mode=0o700), directory('./home/agent/d', mode=0o4777)))

    assert '"./home/agent/d"' in err.reason


def test_a_file_written_through_a_symlink_of_the_same_name_is_refused():
    # jwilk's symlink-then-write: the second member would be written where the link points.
    err = refused(payload(symlink('./home/agent/moo', '../../etc/passwd'), regular('./home/agent/moo', b'pwned')))

    assert '"./home/agent/moo"' in err.reason and 'second time' in err.reason


# Types.

@pytest.mark.parametrize('kind, what', [
    (tarfile.CHRTYPE, 'character device'),
    (tarfile.BLKTYPE, 'block device'),
    (tarfile.FIFOTYPE, 'FIFO'),
    (b'V', 'GNU volume label'),
    (b'D', 'GNU directory dump'),
    (b'Z', 'unknown tar type "Z"'),
], ids=['char-device', 'block-device', 'fifo', 'gnu-volume-label', 'gnu-dumpdir', 'unknown'])
def test_a_member_that_is_not_a_file_directory_or_link_is_refused(kind, what):
    err = refused(payload(member('./home/agent/odd', kind)))

    assert '"./home/agent/odd"' in err.reason and what in err.reason


# The root, home and home/agent.

@pytest.mark.parametrize('root', [regular('.', b'x'), regular('./', b''), symlink('.', '/'), symlink('./', '..')],
                         ids=['file-dot', 'file-dot-slash', 'symlink-to-slash', 'symlink-up'])
def test_a_root_that_is_not_a_directory_is_refused(root):
    err = refused(gz(tar_bytes([root, directory('home'), directory('home/agent')])))

    assert 'root' in err.reason


@pytest.mark.parametrize('members, name', [
    ([symlink('./home', 'etc'), directory('./home/agent')], './home'),
    ([directory('./home'), regular('./home/agent', b'x')], './home/agent'),
    ([directory('./home'), symlink('./home/agent', '.')], './home/agent'),
], ids=['home-symlink', 'agent-file', 'agent-symlink'])
def test_home_and_home_agent_that_are_not_directories_are_refused(members, name):
    err = refused(gz(tar_bytes([directory('.')] + members)))

    assert '"%s"' % name in err.reason and 'must be a directory' in err.reason


@pytest.mark.parametrize('members, missing', [
    ([directory('.')], 'home'),
    ([directory('.'), directory('./home')], 'home/agent'),
    ([], 'home'),
], ids=['no-home', 'no-home-agent', 'empty-tar'])
def test_a_payload_without_home_or_home_agent_is_refused(members, missing):
    err = refused(gz(tar_bytes(members)))

    assert '"%s"' % missing in err.reason


# Nothing below a link.

def test_a_member_below_a_symlink_to_a_directory_is_refused():
    # libarchive's secure-symlinks test: link_to_dir/filea must not be written through the link.
    err = refused(payload(directory('./home/agent/dir'), symlink('./home/agent/link_to_dir', 'dir'),
                          regular('./home/agent/link_to_dir/filea', b'x')))

    assert '"./home/agent/link_to_dir/filea"' in err.reason and 'below the symbolic link' in err.reason


def test_a_member_below_a_symlink_that_only_comes_later_is_refused():
    err = refused(payload(regular('./home/agent/d/f', b'x'), symlink('./home/agent/d', '../../..')))

    assert '"./home/agent/d/f"' in err.reason and 'below the symbolic link' in err.reason


def test_a_member_below_a_symlink_out_of_the_root_is_refused_at_the_member():
    # jwilk's dirsymlink with a relative target: dir -> .. then dir/moo lands outside.
    err = refused(payload(symlink('./dir', '..'), regular('./dir/moo', b'x')))

    assert '"./dir/moo"' in err.reason


@pytest.mark.parametrize('parent', [regular('./home/agent/f', b'x'), hardlink('./home/agent/f', './home/agent/g')],
                         ids=['below-a-file', 'below-a-hard-link'])
def test_a_member_below_something_that_is_not_a_directory_is_refused(parent):
    members = [regular('./home/agent/g', b'y'), parent, regular('./home/agent/f/x', b'x')]

    err = refused(payload(*members))
    assert '"./home/agent/f/x"' in err.reason and 'not a directory' in err.reason


def test_a_member_whose_parent_directory_is_not_in_the_archive_is_refused():
    err = refused(payload(regular('./home/agent/nowhere/f', b'x')))

    assert '"./home/agent/nowhere/f"' in err.reason and 'not a directory in the archive' in err.reason


# Symbolic links.

def test_a_symlink_with_an_empty_target_is_refused():
    assert 'empty target' in refused(payload(symlink('./home/agent/l', ''))).reason


@pytest.mark.parametrize('target', ['/etc/passwd', '/', '//tmp'], ids=['file', 'root', 'double-slash'])
def test_a_symlink_to_an_absolute_path_is_refused(target):
    err = refused(payload(symlink('./home/agent/l', target)))

    assert '"./home/agent/l"' in err.reason and 'absolute path' in err.reason


@pytest.mark.parametrize('name, target', [
    ('./home/agent/l', '../../..'),
    ('./home/agent/l', '../../../etc/passwd'),
    ('./l', '..'),
    ('./home/agent/l', 'a/../../../../x'),
], ids=['one-too-far', 'etc-passwd', 'from-the-root', 'after-a-name'])
def test_a_symlink_pointing_out_of_the_root_is_refused(name, target):
    err = refused(payload(symlink(name, target)))

    assert '"%s"' % name in err.reason and 'out of the root' in err.reason


def test_a_symlink_that_escapes_only_where_another_link_really_leads_is_refused():
    # jwilk's dirsymlink2: cur -> . makes cur/.. the parent of the root, though it reads as the root.
    err = refused(payload(symlink('./cur', '.'), symlink('./par', 'cur/..')))

    assert '"./par"' in err.reason and 'out of the root' in err.reason


def test_a_symlink_that_escapes_after_a_link_deep_in_the_tree_is_refused():
    # Lexically home/agent/inner/up/../.. is home/agent; up really leads to home, so it is the root's parent.
    err = refused(payload(directory('./home/agent/inner'), symlink('./home/agent/inner/up', '../..'),
                          symlink('./esc', 'home/agent/inner/up/../..')))

    assert '"./esc"' in err.reason


def test_a_chain_of_symlinks_that_ends_outside_is_refused_at_its_first_link():
    # CVE-2025-4138 / CVE-2025-4330: each link looks harmless, the chain leaves the root.
    err = refused(payload(symlink('./home/agent/a', 'b'), symlink('./home/agent/b', 'c'),
                          symlink('./home/agent/c', '../../..')))

    assert '"./home/agent/a"' in err.reason and 'at the link "home/agent/c"' in err.reason


def test_a_path_max_sized_symlink_chain_that_escapes_is_refused():
    # CVE-2025-4517: links whose expansion exceeds PATH_MAX, where os.path.realpath stops resolving.
    component = 'd' * 247
    members, path = [], ''
    for _step in range(16):
        path = path + '/' + component if path else './home/agent/' + component
        members.append(directory(path))
    deepest = path[len('./'):]
    # From its own directory, 18 levels deep, l leads to the root.
    members.append(symlink(path + '/l', '/'.join(['..'] * 18)))
    members.append(symlink('./escape', deepest + '/l/..'))

    err = refused(payload(*members))
    assert 'escape' in err.reason and 'out of the root' in err.reason


def test_the_realpath_limit_attack_is_refused_at_its_member_below_a_link():
    # CVE-2025-4517 as published: dirs and step links, a long link below the steps, then writes through it.
    members = realpath_limit_members()

    err = refused(payload(*members))
    assert err.reason.startswith('The payload member "a/b/c/d/e/f') and 'below the symbolic link "a"' in err.reason


@pytest.mark.parametrize('links', [
    [('a', 'b'), ('b', 'a')],
    [('a', 'a')],
    [('a', 'a/b')],
    [('x', 'y/z'), ('y', '.'), ('z', 'x')],
], ids=['two-links', 'self', 'into-itself', 'through-a-directory-link'])
def test_a_cycle_of_symlinks_is_refused(links):
    members = [symlink('./home/agent/' + name, target) for name, target in links]

    assert 'cycle' in refused(payload(*members)).reason


def test_a_symlink_target_with_a_control_character_is_refused():
    assert 'control character' in refused(payload(symlink('./home/agent/l', 'a\nb'))).reason


# Hard links.

@pytest.mark.parametrize('target, rule', [
    ('', 'empty target'),
    ('/etc/passwd', 'absolute path'),
    ('../outside', 'leaves the root'),
    ('./home/agent/../../../etc/shadow', 'leaves the root'),
    ('home/agent/missing', 'not an earlier member'),
    ('home/agent/later', 'not an earlier member'),
    ('home/agent/self', 'not an earlier member'),
    ('home/agent', 'a directory, not a regular file'),
    ('home/agent/sym', 'a symbolic link, not a regular file'),
    ('home/agent/hard', 'a hard link, not a regular file'),
    ('home/agent/f\x1b', 'control character'),
], ids=['empty', 'absolute', 'outside', 'dot-dot-inside', 'missing', 'later-member', 'itself', 'directory', 'symlink',
        'hard-link', 'control-character'])
def test_a_hard_link_that_does_not_name_an_earlier_regular_file_is_refused(target, rule):
    members = [regular('./home/agent/f', b'x'), symlink('./home/agent/sym', 'f'), hardlink('./home/agent/hard', 'home/agent/f'),
               hardlink('./home/agent/self', target), regular('./home/agent/later', b'y')]

    err = refused(payload(*members))
    assert '"./home/agent/self"' in err.reason and rule in err.reason


def test_a_hard_link_to_a_symlink_that_escapes_is_refused():
    # CVE-2024-12718 / CVE-2025-4330: a hard link to a link lets later members touch what it points at.
    err = refused(payload(symlink('./home/agent/s', '../../../etc/passwd'), hardlink('./home/agent/h', 'home/agent/s'),
                          regular('./home/agent/h', b'root::0:0::/:/bin/sh', mode=0o4755)))

    assert '"./home/agent/h"' in err.reason and 'symbolic link' in err.reason


# Corruption.

def complete():
    return payload(regular('./home/agent/notes', os.urandom(3000)))


@pytest.mark.parametrize('damage', [
    lambda data: data[:len(data) // 2],
    lambda data: data[:-8],
    lambda data: data[:-1],
    lambda data: data[:-4] + bytes([data[-4] ^ 1]) + data[-3:],
    lambda data: data[:-8] + bytes([data[-8] ^ 1]) + data[-7:],
    lambda data: data[:40] + bytes([data[40] ^ 0xff]) + data[41:],
    lambda data: data + b'trailing garbage',
    lambda data: b'',
    lambda data: b'not gzip at all',
], ids=['cut-in-half', 'no-trailer', 'trailer-cut-short', 'wrong-length', 'wrong-crc', 'flipped-deflate-byte',
        'garbage-after-gzip', 'empty', 'not-gzip'])
def test_a_damaged_gzip_stream_is_refused_as_corrupt(damage):
    refused(damage(complete()), cause='ARCHIVE_CORRUPT')


def test_a_complete_gzip_of_a_tar_cut_at_a_member_boundary_is_refused_as_corrupt():
    raw = tar_bytes(BASE + (regular('./home/agent/f', b'x' * 600),))
    end = raw.index(b'\0' * 1024, 4 * 512 + 1024)

    refused(gz(raw[:end]), cause='ARCHIVE_CORRUPT')


def test_a_tar_cut_inside_a_member_is_refused_as_corrupt():
    raw = tar_bytes(BASE + (regular('./home/agent/f', os.urandom(5000)),))

    refused(gz(raw[:4 * 512 + 1000]), cause='ARCHIVE_CORRUPT')


def test_a_broken_header_after_the_first_member_is_refused_as_corrupt():
    raw = tar_bytes(BASE)

    refused(gz(raw[:1536] + b'\x01' * 512 + raw[1536:]), cause='ARCHIVE_CORRUPT')


def test_data_after_the_end_of_the_tar_is_refused_as_corrupt():
    raw = tar_bytes(BASE)

    refused(gz(raw + b'hidden'), cause='ARCHIVE_CORRUPT')


def test_a_corrupt_reason_says_what_is_wrong():
    err = refused(complete()[:-8], cause='ARCHIVE_CORRUPT')

    assert 'not a complete gzip-compressed tar' in err.reason and err.fix
