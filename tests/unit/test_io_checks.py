# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A writer that checks what it passes on: SHA-256 unless told, or CRC-32 for a read-back of our own writing."""

import hashlib
import io
import os
import zlib

from ansible_collections.col_agents.tx9.plugins.module_utils._io import Crc32, HashingWriter


def test_crc32_taken_in_chunks_is_the_crc32_of_the_whole():
    data = os.urandom(3 * 1024 * 1024 + 17)
    check = Crc32()
    for start in range(0, len(data), 65536):
        check.update(data[start:start + 65536])

    assert check.hexdigest() == '%08x' % zlib.crc32(data)


def test_a_hashing_writer_passes_every_byte_on_and_keeps_its_size_and_digest():
    data = os.urandom(100000)
    for algorithm, expected in ((hashlib.sha256, hashlib.sha256(data).hexdigest()), (Crc32, '%08x' % zlib.crc32(data))):
        target = io.BytesIO()
        writer = HashingWriter(target, algorithm)
        writer.write(data[:4096])
        writer.write(data[4096:])

        assert target.getvalue() == data
        assert (writer.hexdigest(), writer.size) == (expected, len(data))


def test_one_changed_byte_changes_the_crc32():
    data = bytearray(os.urandom(1 << 20))
    before = Crc32()
    before.update(bytes(data))
    data[len(data) // 2] ^= 0x01
    after = Crc32()
    after.update(bytes(data))

    assert before.hexdigest() != after.hexdigest()
