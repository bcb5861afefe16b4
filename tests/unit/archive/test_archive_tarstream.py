# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tar reader's limits and the canonical writer: what Docker is given, and what GNU tar and Python read in it."""

import gzip
import io
import json
import os
import subprocess
import tarfile

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import envelope as archive
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import metadata as archive_metadata
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import tarheader
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import tarwriter
from ansible_collections.col_agents.tx9.plugins.module_utils._archive import validator
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable.importer import no_space
from ansible_collections.col_agents.tx9.tests.unit.archive.tx9_archive_kit import (
    BASE, directory, gz, hardlink, member, regular, symlink, tar_bytes, write_tx9)

LONG = 'home/agent/' + 'd' * 120
UNICODE = 'home/agent/\u00fcber \u65e5\u672c.txt'


def raw_header(name, typeflag=b'0', size=0, magic=tarheader.USTAR_MAGIC):
    """One header block written by hand, with its checksum."""
    block = bytearray(512)
    block[0:len(name)] = name
    block[100:108] = b'0000644\0'
    block[108:124] = b'0000000\0' * 2
    block[124:136] = b'%011o\0' % size
    block[136:148] = b'%011o\0' % 1764470834
    block[156:157] = typeflag
    block[257:265] = magic
    block[148:156] = b' ' * 8
    block[148:156] = b'%06o\0 ' % sum(block)
    return bytes(block)


def base_tar():
    return tar_bytes(BASE)[:3 * 512]


def refused_stream(data, cause='ARCHIVE_UNSAFE', **kwargs):
    with pytest.raises(Tx9Error) as info:
        validator.validate_stream(io.BytesIO(data), compressed=False, **kwargs)
    assert info.value.cause == cause, info.value.reason
    return info.value


def canonical(members, uid=1001, gid=1001):
    """The canonical tar of (TarInfo, data) members, as the import writes it."""
    out = io.BytesIO()
    raw = tar_bytes(members)
    for item, reader in validator.iter_members(io.BytesIO(raw), compressed=False, with_reader=True):
        out.write(tarwriter.canonical_header(tarheader.normalise(item.name), item, uid, gid))
        if item.kind == tarheader.REGULAR:
            for chunk in reader.data():
                out.write(chunk)
            out.write(tarwriter.padding(item.size))
    out.write(tarwriter.END_OF_ARCHIVE)
    return out.getvalue()


def box_like_members():
    return BASE + (
        directory('./home/agent/workspace'),
        regular('./home/agent/workspace/run.sh', b'#!/bin/sh\necho run\n', mode=0o4755),
        regular('./' + LONG, b'long name'),
        regular('./' + UNICODE, 'gr\u00fc\u00dfe'.encode('utf-8')),
        symlink('./home/agent/workspace/link', '../' + LONG.rsplit('/', maxsplit=1)[-1]),
        symlink('./home/agent/long-link', 'workspace/' + 'x' * 150),
        hardlink('./home/agent/hard', './home/agent/workspace/run.sh'),
        directory('./home/agent/sticky', mode=0o1777),
    )


# The canonical writer.

def test_gnu_tar_lists_the_canonical_stream_as_exactly_the_members_the_validator_counted(tmp_path):
    members = box_like_members()
    summary = validator.validate_stream(io.BytesIO(gz(tar_bytes(members))))
    path = tmp_path / 'canonical.tar'
    path.write_bytes(canonical(members))

    listing = subprocess.run(['tar', '--numeric-owner', '-tvf', str(path)], check=True, stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.splitlines()

    assert len(listing) == summary.members
    kinds = ''.join(line[0] for line in listing)
    assert kinds.count('d') == summary.directories and kinds.count('-') + kinds.count('h') == summary.files + summary.hardlinks
    assert kinds.count('l') == summary.symlinks
    assert any(line.endswith(LONG) for line in listing)
    assert any(line.endswith('home/agent/long-link -> workspace/' + 'x' * 150) for line in listing)
    assert any(line.endswith('home/agent/hard link to home/agent/workspace/run.sh') for line in listing)


def test_the_canonical_stream_owns_every_member_by_the_agent_and_keeps_permission_bits_only():
    with tarfile.open(fileobj=io.BytesIO(canonical(box_like_members())), mode='r:') as tar:
        infos = tar.getmembers()

    assert {(info.uid, info.gid) for info in infos} == {(1001, 1001)}
    assert all(info.mode & 0o7000 == 0 for info in infos)
    modes = dict((info.name, info.mode) for info in infos)
    assert modes['home/agent/workspace/run.sh'] == 0o755 and modes['home/agent/sticky'] == 0o777


def test_the_canonical_stream_reads_back_through_our_reader_with_the_same_names_sizes_and_targets():
    members = box_like_members()
    before = [(tarheader.normalise(m.name), m.kind, m.size, m.linkname)
              for m in validator.iter_members(io.BytesIO(tar_bytes(members)), compressed=False)]
    after = [(tarheader.normalise(m.name), m.kind, m.size, m.linkname)
             for m in validator.iter_members(io.BytesIO(canonical(members)), compressed=False)]

    assert [entry[:3] for entry in after] == [entry[:3] for entry in before]
    assert [entry[3] for entry in after if entry[1] == tarheader.SYMLINK] == \
        [entry[3] for entry in before if entry[1] == tarheader.SYMLINK]
    assert [entry[3] for entry in after if entry[1] == tarheader.HARDLINK] == ['home/agent/workspace/run.sh']


def test_a_name_that_is_not_utf_8_travels_byte_for_byte_in_the_canonical_stream(tmp_path):
    raw = tar_bytes(BASE + (member('./home/agent/caf\udce9', data=b'x'),), fmt=tarfile.GNU_FORMAT)
    path = tmp_path / 'canonical.tar'
    out = b''
    for item, reader in validator.iter_members(io.BytesIO(raw), compressed=False, with_reader=True):
        out += tarwriter.canonical_header(tarheader.normalise(item.name), item, 1001, 1001)
        if item.kind == tarheader.REGULAR:
            out += b''.join(reader.data()) + tarwriter.padding(item.size)
    path.write_bytes(out + tarwriter.END_OF_ARCHIVE)

    listing = subprocess.run(['tar', '--quoting-style=literal', '-tf', str(path)], check=True, stdout=subprocess.PIPE).stdout

    assert b'home/agent/caf\xe9\n' in listing


def test_times_before_1970_and_sizes_past_8_gib_are_written_in_base_256():
    item = tarheader.Member('big', tarheader.REGULAR, size=9 * 1024 ** 3, mode=0o644, mtime=-86400)
    header = tarwriter.canonical_header('home/agent/big', item, 1001, 1001)

    parsed = tarheader.Header(header, None)
    assert parsed.number(124, 136, 'size') == 9 * 1024 ** 3
    assert parsed.number(136, 148, 'modification time', signed=True) == -86400


# Limits, each refused before work proportional to what is claimed.

def test_a_member_claiming_more_than_the_stream_can_hold_is_refused_at_once():
    data = base_tar() + raw_header(b'./home/agent/huge', size=1 << 40)

    err = refused_stream(data, max_bytes=64 * 1024)

    assert '"./home/agent/huge"' in err.reason and 'can still hold' in err.reason


def test_a_pax_header_over_1_mib_is_refused_before_it_is_read():
    data = base_tar() + raw_header(b'././@PaxHeader', b'x', size=512 * 1024 * 1024)

    err = refused_stream(data)

    assert 'extension header of %d bytes' % (512 * 1024 * 1024) in err.reason


def test_a_name_over_4096_bytes_is_refused():
    err = refused_stream(tar_bytes(BASE + (regular('./home/agent/' + 'n' * 4100),)))

    assert 'name of' in err.reason and 'at most 4096' in err.reason


def test_a_path_over_256_components_is_refused():
    err = refused_stream(tar_bytes(BASE + (regular('./home/agent/' + 'a/' * 260 + 'f'),)))

    assert 'more than 256 components' in err.reason


def test_a_name_component_over_255_bytes_is_refused_before_an_extraction_could_fail_half_way():
    err = refused_stream(tar_bytes(BASE + (regular('./home/agent/' + 'c' * 256),)))

    assert 'component of more than 255 bytes' in err.reason


def test_a_link_target_over_4096_bytes_is_refused():
    err = refused_stream(tar_bytes(BASE + (symlink('./home/agent/l', 'x' * 4200),)))

    assert 'link target of 4200 bytes' in err.reason


def test_symbolic_links_with_long_targets_resolve_in_time_linear_in_their_length():
    # 4,000 links whose 2 KiB targets walk 250 directories deep: quadratic work would take minutes.
    members = list(BASE) + [directory('./home/agent/' + '/'.join(['d' * 7] * depth)) for depth in range(1, 251)]
    target = '/'.join(['d' * 7] * 250)
    members += [symlink('./home/agent/l%04d' % number, target) for number in range(4000)]

    summary = validator.validate_stream(io.BytesIO(gz(tar_bytes(members))))

    assert summary.symlinks == 4000


def test_members_with_setuid_setgid_or_sticky_bits_are_counted_for_the_result():
    summary = validator.validate_stream(io.BytesIO(gz(tar_bytes(box_like_members()))))

    assert summary.special_modes == 2


def test_a_payload_larger_than_the_free_space_is_no_space_with_the_numbers():
    members = BASE + (regular('./home/agent/big', b'x' * 100000),)
    check = validator.PayloadValidator(max_disk=50000, on_disk_exceeded=no_space('/var/lib/docker/volumes'))

    with pytest.raises(Tx9Error) as info:
        validator.validate_stream(io.BytesIO(gz(tar_bytes(members))), validator=check)

    assert info.value.cause == 'NO_SPACE'
    assert 'only 50000 bytes are free' in info.value.reason and '/var/lib/docker/volumes' in info.value.reason


def test_a_plain_payload_may_expand_1032_times_its_stored_size(tmp_path):
    data = gz(tar_bytes(BASE))
    write_tx9(tmp_path / 'plain.tx9', data)
    plain = archive.read_archive(str(tmp_path / 'plain.tx9'))

    assert archive.expansion_bound(plain) == len(data) * 1032 + 64 * 1024


def test_metadata_nested_60000_deep_is_invalid_not_a_crash():
    raw = b'[' * 30000 + b']' * 30000
    with pytest.raises(Tx9Error) as info:
        archive_metadata.parse_metadata(raw, 'x.tx9')

    assert info.value.cause == 'ARCHIVE_INVALID' and 'nests' in info.value.reason


def test_metadata_with_brackets_inside_strings_is_not_counted_as_nesting():
    meta = dict(json.loads(json.dumps(archive_metadata.new_metadata('dev', 'img', False, 'a' * 64, 1))), note='[[[[' * 100)

    assert archive_metadata.parse_metadata(json.dumps(meta).encode('utf-8')).box == 'dev'


def test_a_gzip_payload_cut_inside_its_deflate_stream_is_corrupt():
    data = gzip.compress(tar_bytes(BASE + (regular('./home/agent/r', os.urandom(4000)),)))

    with pytest.raises(Tx9Error) as info:
        validator.validate_stream(io.BytesIO(data[:len(data) // 2]))

    assert info.value.cause == 'ARCHIVE_CORRUPT'
