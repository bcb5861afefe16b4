# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The quiesce marker as a Context reads it: who quiesced the box, never blocking on an odd file."""

import os

from guest_helpers import returns_without_blocking_on


def test_a_marker_with_unexpected_content_reads_as_quiesced_by_unknown(box):
    ctx = box()
    os.makedirs(ctx.paths.state)
    with open(ctx.paths.quiesced, 'w') as f:
        f.write('not a word!\n')
    assert ctx.quiesced_by == 'unknown'


def test_a_marker_that_is_a_symlink_or_a_fifo_reads_as_unknown_without_blocking(box, tmp_path):
    ctx = box()
    os.makedirs(ctx.paths.state)
    target = tmp_path / 'elsewhere'
    target.write_text('backup\n')
    os.symlink(str(target), ctx.paths.quiesced)
    assert ctx.quiesced and ctx.quiesced_by == 'unknown'
    os.unlink(ctx.paths.quiesced)
    os.mkfifo(ctx.paths.quiesced)
    assert returns_without_blocking_on(ctx.paths.quiesced, lambda: ctx.quiesced_by) == 'unknown'
