# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures the unit tests share."""


import subprocess

import pytest


@pytest.fixture
def full_disk(tmp_path):
    """A directory on a 1 MiB filesystem of its own (tmpfs), which fills as a real disk does."""
    mount_point = tmp_path / 'small-disk'
    mount_point.mkdir()
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1m,mode=0700', 'tx9-full', str(mount_point)], check=True)
    yield mount_point
    subprocess.run(['umount', str(mount_point)], check=True)
