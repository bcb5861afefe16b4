# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The durable log file: rotation by size, and destinations it refuses."""

import os

import pytest

from guest_helpers import returns_without_blocking_on
from tx9guest import eventlog


def test_the_log_rotates_before_a_write_would_pass_the_size_limit(tmp_path):
    path = str(tmp_path / 'x.jsonl')
    log = eventlog.RotatingFile(path, max_bytes=1024, max_files=3)
    line = b'y' * 300 + b'\n'
    for _line in range(3):
        log.write(line)
    assert os.path.getsize(path) == 903 and not os.path.exists(path + '.1')
    log.write(line)
    assert os.path.getsize(path + '.1') == 903 and os.path.getsize(path) == 301
    for _line in range(6):
        log.write(line)
    log.close()
    assert sorted(os.listdir(str(tmp_path))) == ['x.jsonl', 'x.jsonl.1', 'x.jsonl.2'], 'max_files counts the current file'
    assert all(os.path.getsize(os.path.join(str(tmp_path), f)) <= 1024 for f in os.listdir(str(tmp_path)))


def test_a_log_destination_that_is_a_symlink_or_a_fifo_is_rejected_without_blocking(tmp_path):
    os.symlink('/etc/passwd', str(tmp_path / 'link.jsonl'))
    with pytest.raises(eventlog.LogFileError):
        eventlog.RotatingFile(str(tmp_path / 'link.jsonl'))
    os.mkfifo(str(tmp_path / 'fifo.jsonl'))
    with pytest.raises(eventlog.LogFileError):
        returns_without_blocking_on(str(tmp_path / 'fifo.jsonl'),
                                    lambda: eventlog.RotatingFile(str(tmp_path / 'fifo.jsonl')))
