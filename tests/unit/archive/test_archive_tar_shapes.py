# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validator against tar shapes that Python's tarfile, GNU tar and Go's archive/tar read differently.

tar_shapes builds each shape byte by byte; its docstrings say what each
parser sees. A payload Docker extracts must never be one the parsers
disagree on, so every shape is refused; shapes they all read alike and the
format allows still pass; and GNU tar lists the builder's plain payloads as
built, which shows the builder writes real tar.
"""


import gzip
import io
import subprocess

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._archive import validator as _validator
from ansible_collections.col_agents.tx9.plugins.module_utils._archive.envelope import payload_expansion_bound
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.tests.unit.archive import tar_shapes as shapes


def validate(data):
    """Validate as an import does: bounded by what the stored gzip can expand to."""
    packed = gzip.compress(data, mtime=0)
    return _validator.validate_stream(io.BytesIO(packed), max_bytes=payload_expansion_bound(len(packed), False))


def gnu_tar_listing(data):
    """What GNU tar -tv lists, one (mode, owner, size, name) per member; it must exit 0."""
    done = subprocess.run(['tar', '--utc', '-tvf', '-'], input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          check=False)
    assert done.returncode == 0, done.stderr.decode('utf-8', 'replace')
    rows = []
    for line in done.stdout.decode('utf-8').splitlines():
        mode, owner, size, _day, _time, name = line.split(None, 5)
        rows.append((mode, owner, int(size), name))
    return rows


PLAIN_ROWS = [
    ('drwxr-xr-x', '0/0', 0, './'),
    ('drwxr-xr-x', '0/0', 0, './home/'),
    ('drwxr-xr-x', '0/0', 0, './home/agent/'),
    ('-rw-r--r--', '0/0', len(shapes.PLAIN_DATA), shapes.PLAIN_NAME),
    ('-rw-r--r--', '0/0', len(shapes.PLAIN_DATA), shapes.PLAIN_LONG_NAME),
]


@pytest.mark.parametrize('shape', shapes.SHAPES, ids=[shape.id for shape in shapes.SHAPES])
def test_a_tar_shape_that_parsers_read_differently_is_refused_by_the_validator(shape):
    with pytest.raises(Tx9Error) as refusal:
        validate(shape.build())

    assert refusal.value.cause == shape.expected_cause, refusal.value.reason
    if shape.expected_member is not None:
        assert shape.expected_member in refusal.value.reason


@pytest.mark.parametrize('shape_id', shapes.CANARY_IDS)
def test_a_shape_built_around_an_escape_from_the_extraction_directory_is_refused_by_the_validator(shape_id):
    expected = [shape for shape in shapes.SHAPES if shape.id == shape_id][0]

    with pytest.raises(Tx9Error) as refusal:
        validate(shapes.canary(shape_id))

    assert refusal.value.cause == expected.expected_cause, refusal.value.reason


@pytest.mark.parametrize('name, build', shapes.AGREED, ids=[name for name, _build in shapes.AGREED])
def test_a_shape_every_parser_reads_alike_and_the_format_allows_passes_the_validator(name, build):
    assert validate(build()).members >= 4


@pytest.mark.parametrize('magic', [shapes.USTAR, shapes.GNU], ids=['ustar-and-pax', 'gnu'])
def test_the_builders_plain_payload_passes_the_validator(magic):
    summary = validate(shapes.plain_payload(magic))

    assert (summary.members, summary.directories, summary.files) == (5, 3, 2)


@pytest.mark.parametrize('magic', [shapes.USTAR, shapes.GNU], ids=['ustar-and-pax', 'gnu'])
def test_gnu_tar_lists_the_builders_plain_payload_as_it_was_built(magic):
    assert gnu_tar_listing(shapes.plain_payload(magic)) == PLAIN_ROWS


def test_gnu_tar_lists_the_builders_setuid_root_file_with_its_bits_and_owner():
    rows = gnu_tar_listing(shapes.setuid_root_file())

    assert rows[-1] == ('-rwsr-sr-x', 'root/root', 10, 'home/agent/shape-setuid')


def test_the_builders_headers_carry_the_checksum_gnu_tar_and_tarfile_compute():
    data = shapes.plain_payload(shapes.USTAR)
    block = data[:shapes.BLOCK]
    unsigned, _signed = shapes.checksums(block)

    assert int(block[148:154], 8) == unsigned
    assert [info.name for info in _validator.iter_members(io.BytesIO(data), compressed=False)] == [
        row[3].rstrip('/') or '.' for row in PLAIN_ROWS]


def test_every_shape_is_whole_blocks_ending_in_the_end_of_archive_blocks():
    for shape in shapes.SHAPES:
        data = shape.build()
        assert len(data) % shapes.BLOCK == 0, shape.id
        assert data.endswith(shapes.END), shape.id
    for shape_id in shapes.CANARY_IDS:
        assert shapes.canary(shape_id).endswith(shapes.END), shape_id
