# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tx9_relay action in a real play on localhost (local connection at both ends): the file arrives
whole with the result naming it, a wrong SHA-256 fails with RELAY_FAILED naming the step and keeps nothing,
and check mode relays nothing."""


import hashlib
import json
import os
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Relay
      col_agents.tx9.tx9_relay:
        src: "{{ src }}"
        src_host: localhost
        dest_dir: "{{ dest_dir }}"
        size: "{{ size }}"
        sha256: "{{ sha256 }}"
      register: relayed
      ignore_errors: true
    - name: Keep the result
      ansible.builtin.copy:
        content: "{{ relayed | to_json }}"
        dest: "{{ out }}"
        mode: '0600'
      check_mode: false
"""


@pytest.fixture
def relay(tmp_path):
    src = tmp_path / 'out' / 'archive.tx9'
    src.parent.mkdir()
    src.write_bytes(os.urandom(300000))
    play = tmp_path / 'play.yml'
    play.write_text(PLAY)

    def run(sha256, *args):
        extra = dict(src=str(src), dest_dir=str(tmp_path / 'in'), size=300000, sha256=sha256, out=str(tmp_path / 'r.json'))
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, 'ansible.cfg'), ANSIBLE_NOCOLOR='1')
        proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), str(play),
                               '-e', json.dumps(extra)] + list(args), cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, check=False, timeout=300)
        assert proc.returncode == 0, proc.stdout
        return json.loads((tmp_path / 'r.json').read_text())

    return src, tmp_path / 'in', run


def test_the_action_relays_a_file_between_two_local_ends_and_returns_its_path_size_and_sha256(relay):
    src, dest_dir, run = relay
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    result = run(digest)
    assert result['changed'] and not result.get('failed')
    assert (result['path'], result['size'], result['sha256']) == (str(dest_dir / 'archive.tx9'), 300000, digest)
    assert (dest_dir / 'archive.tx9').read_bytes() == src.read_bytes()


def test_a_wrong_sha256_fails_with_relay_failed_at_the_check_and_keeps_nothing(relay):
    src, dest_dir, run = relay
    result = run('0' * 64)
    assert result['failed'] and result['cause'] == 'RELAY_FAILED' and result['step'] == 'check', result
    assert 'from localhost to localhost failed at check' in result['msg'] and result['fix']
    assert os.listdir(dest_dir) == []


def test_check_mode_relays_nothing_and_names_the_path_it_would_write(relay):
    src, dest_dir, run = relay
    result = run('', '--check')
    assert result['changed'] and result['path'] == str(dest_dir / 'archive.tx9')
    assert not dest_dir.exists()
