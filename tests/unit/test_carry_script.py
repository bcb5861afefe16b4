# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/tx9_box/files/carry.sh, run for real in bash: a file from another host arrives whole, no byte beyond the
size its writer reported is kept, and a transfer that breaks off or sends more leaves nothing behind. The other
host is a local shell here (the command the roles give is ssh ... -- host)."""


import os
import stat
import subprocess

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CARRY = os.path.join(REPO_ROOT, 'roles', 'tx9_box', 'files', 'carry.sh')
# Runs the command carry.sh asks the other host to run, as ssh's remote shell would.
LOCAL_PEER = ('sh', '-c', 'eval "$0"')


def carry(src, size, dest, peer=LOCAL_PEER, home=None):
    env = dict(os.environ, HOME=str(home)) if home else None
    return subprocess.run(['bash', CARRY, str(src), 'old-host', str(size), str(dest)] + list(peer), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)


@pytest.fixture
def written(tmp_path):
    src = tmp_path / 'out' / "dev 'quoted' $HOME.tx9"
    src.parent.mkdir()
    src.write_bytes(os.urandom(70000))
    return src


def test_a_file_arrives_whole_in_a_directory_made_0700_and_its_path_is_printed(written, tmp_path):
    dest = tmp_path / 'in' / 'deeper'
    done = carry(written, 70000, dest)
    assert done.returncode == 0, done.stderr
    arrived = dest / written.name
    assert done.stdout.splitlines()[-1] == str(arrived)
    assert arrived.read_bytes() == written.read_bytes()
    assert stat.S_IMODE(dest.stat().st_mode) == 0o700 and stat.S_IMODE(arrived.stat().st_mode) == 0o600
    assert os.listdir(dest) == [written.name]


def test_a_directory_under_home_is_made_in_this_users_home(written, tmp_path):
    home = tmp_path / 'home'
    home.mkdir()
    done = carry(written, 70000, '~/incoming', home=home)
    assert done.returncode == 0, done.stderr
    assert (home / 'incoming' / written.name).read_bytes() == written.read_bytes()


def test_a_host_that_sends_more_than_the_size_written_is_refused_and_nothing_is_kept(written, tmp_path):
    dest = tmp_path / 'in'
    done = carry(written, 69999, dest)
    assert done.returncode == 3
    assert 'old-host sends more than the 69999 bytes of %s it wrote; nothing was kept here' % written in done.stderr
    assert os.listdir(dest) == []


def test_a_file_shorter_than_written_is_a_transfer_that_broke_off_and_nothing_is_kept(written, tmp_path):
    dest = tmp_path / 'in'
    done = carry(written, 70001, dest)
    assert done.returncode == 3
    assert 'broke off after 70000 of 70001 bytes (exit 0); nothing was kept here' in done.stderr
    assert os.listdir(dest) == []


def test_a_peer_that_fails_midway_is_a_transfer_that_broke_off(written, tmp_path):
    dest = tmp_path / 'in'
    done = carry(written, 70000, dest, peer=['sh', '-c', 'eval "$0" | head -c 1000; exit 255'])
    assert done.returncode == 3
    assert 'broke off after 1000 of 70000 bytes (exit 255)' in done.stderr
    assert os.listdir(dest) == []


def test_wrong_arguments_are_refused_before_anything_is_made(written, tmp_path):
    dest = tmp_path / 'in'
    assert carry(written, '12k', dest).returncode == 2
    short = subprocess.run(['bash', CARRY, str(written), 'old-host', '5'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, check=False)
    assert short.returncode == 2 and 'usage' in short.stderr
    assert not dest.exists()
