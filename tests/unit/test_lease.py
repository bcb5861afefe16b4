# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box's lease: who takes it, who is refused (BOX_BUSY, naming the holder), what a plan outdated by
another run is told, and the tx9_lease action in a real play: the run is the ansible-playbook process, a
gone run of this controller is taken over, another controller's live lease is not."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from ansible_collections.col_agents.tx9.plugins.action.tx9_lease import gone_here, this_run
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._lease import (
    BUSY,
    KEEP,
    READ_LIMIT,
    TAKE,
    Leases,
    changed_since,
    decide,
    read_journal,
)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOW = 1_000_000.0


def holder(run, controller='c1', pid=10):
    return dict(run=run, controller=controller, pid=pid, purpose='move h1 -> h2')


@pytest.mark.parametrize(
    ('current', 'takeover', 'verdict'),
    [
        (None, '', TAKE),
        (dict(run='me', until=NOW + 60), '', KEEP),
        (dict(run='other', until=NOW + 60), '', BUSY),
        (dict(run='other', until=NOW - 1), '', TAKE),
        (dict(run='other', until=NOW + 60), 'other', TAKE),
        (dict(run='other', until=NOW + 60), 'third', BUSY),
        ({}, '', TAKE),
    ],
)
def test_a_lease_is_taken_when_free_expired_or_named_gone_kept_by_its_run_and_busy_otherwise(
    current, takeover, verdict
):
    assert decide(current, 'me', NOW, takeover) == verdict


def test_a_second_run_is_refused_with_box_busy_naming_the_controller_the_pid_and_since_when(tmp_path):
    leases = Leases(str(tmp_path))
    verdict, lease = leases.hold('dev', holder('a', 'ctl-a', 41), 600)
    assert verdict == TAKE and lease['run'] == 'a' and lease['since']
    with pytest.raises(Tx9Error) as refused:
        leases.hold('dev', holder('b', 'ctl-b', 42), 600)
    assert refused.value.cause == 'BOX_BUSY'
    assert 'pid 41 on controller ctl-a' in refused.value.reason and lease['since'] in refused.value.reason
    assert leases.path('dev') in refused.value.fix
    assert refused.value.details['holder']['run'] == 'a'
    assert leases.read('dev')['run'] == 'a'


def test_the_holder_renews_its_lease_and_only_the_holder_releases_it(tmp_path):
    leases = Leases(str(tmp_path))
    _verdict, first = leases.hold('dev', holder('a'), 600)
    verdict, again = leases.hold('dev', holder('a'), 600)
    assert verdict == KEEP and again['since'] == first['since'] and again['until'] >= first['until']
    assert leases.release('dev', 'b') is False and leases.read('dev')['run'] == 'a'
    assert leases.release('dev', 'a') is True and leases.read('dev') is None
    assert leases.release('dev', 'a') is False


def test_an_expired_lease_or_one_named_gone_is_taken_over(tmp_path):
    leases = Leases(str(tmp_path))
    leases.hold('dev', holder('a'), -1)
    assert leases.hold('dev', holder('b'), 600)[0] == TAKE
    assert leases.hold('dev', holder('c'), 600, takeover='b')[0] == TAKE
    assert leases.read('dev')['run'] == 'c'


def test_the_lease_file_holds_the_whole_holder_and_no_temporary_file_stays(tmp_path):
    leases = Leases(str(tmp_path))
    leases.hold('dev', holder('a'), 600)
    assert sorted(os.listdir(leases.dir)) == ['dev.json']
    assert json.loads((tmp_path / 'leases' / 'dev.json').read_text())['purpose'] == 'move h1 -> h2'


@pytest.mark.parametrize(
    'content',
    [
        b'{"run": "a", "until": 1',
        b'\xff\xfe not text',
        b'["a", 1]',
        b'{"controller": "c1", "until": 9999999999}',
        b'{"run": "", "until": 9999999999}',
        b'{"run": "a", "until": "tomorrow"}',
        b'{"run": "a"}',
    ],
)
def test_a_lease_file_that_is_not_a_lease_is_never_taken_over_but_named_with_state_home(tmp_path, content):
    leases = Leases(str(tmp_path))
    os.makedirs(leases.dir)
    path = tmp_path / 'leases' / 'dev.json'
    path.write_bytes(content)
    for attempt in (lambda: leases.hold('dev', holder('b'), 600), lambda: leases.release('dev', 'a')):
        with pytest.raises(Tx9Error) as refused:
            attempt()
        assert refused.value.cause == 'STATE_HOME'
        assert str(path) in refused.value.reason and 'not a lease' in refused.value.reason
        assert 'Once no run holds the box' in refused.value.fix and f'remove {path}' in refused.value.fix
    assert path.read_bytes() == content


def test_a_lease_file_over_the_read_limit_is_refused_naming_its_path_and_the_limit(tmp_path):
    leases = Leases(str(tmp_path))
    leases.hold('dev', holder('a'), 600)
    path = tmp_path / 'leases' / 'dev.json'
    lease = path.read_text()
    path.write_text(lease + ' ' * (READ_LIMIT - len(lease)))
    assert leases.read('dev')['run'] == 'a'
    path.write_text(lease + ' ' * (READ_LIMIT + 1 - len(lease)))
    with pytest.raises(Tx9Error) as refused:
        leases.read('dev')
    assert refused.value.cause == 'STATE_HOME' and refused.value.details['limit'] == READ_LIMIT
    assert str(path) in refused.value.reason and '64 KiB' in refused.value.reason
    assert f'remove {path}' in refused.value.fix


def test_a_lease_file_that_cannot_be_read_is_named_with_state_home(tmp_path):
    leases = Leases(str(tmp_path))
    os.makedirs(os.path.join(leases.dir, 'dev.json'))
    with pytest.raises(Tx9Error) as refused:
        leases.read('dev')
    assert refused.value.cause == 'STATE_HOME' and 'cannot be read' in refused.value.reason


def test_a_journal_over_the_read_limit_is_refused_and_one_that_is_not_json_reads_as_no_move(tmp_path):
    journal = tmp_path / 'journal.json'
    journal.write_text('{"step": "started"' + ' ' * READ_LIMIT + '}')
    with pytest.raises(Tx9Error) as refused:
        read_journal(str(journal))
    assert refused.value.cause == 'STATE_HOME' and str(journal) in refused.value.reason
    assert '64 KiB' in refused.value.reason and 'move the file away' in refused.value.fix
    journal.write_text('{"step": ')
    assert read_journal(str(journal)) == {}


def test_a_plan_matches_when_the_journal_and_the_box_are_as_it_read_them():
    assert changed_since(dict(step='', dest=''), None, True, '') == ''
    assert changed_since(dict(step='started', dest='h2'), dict(step='started', dest='h2'), False, '') == ''


@pytest.mark.parametrize(
    ('seen', 'journal', 'present', 'moved', 'said'),
    [
        (dict(step=''), dict(step='started', dest='h2'), True, '', 'says a move to h2 at step started now'),
        (dict(step='started', dest='h2'), None, True, '', 'says no move now'),
        (dict(step='started', dest='h2'), dict(step='passed', dest='h2'), True, '', 'at step passed now'),
        (dict(step=''), None, True, 'superseded by its copy on h2', 'moved meanwhile'),
        (dict(step=''), None, False, '', 'no longer on this host'),
    ],
)
def test_a_plan_another_run_outdated_is_told_what_changed(seen, journal, present, moved, said):
    assert said in changed_since(seen, journal, present, moved)


def test_the_journal_is_read_from_a_path_under_the_home_of_the_hosts_user(tmp_path, monkeypatch):
    monkeypatch.setenv('HOME', str(tmp_path))
    (tmp_path / 'migrate' / 'dev').mkdir(parents=True)
    (tmp_path / 'migrate' / 'dev' / 'journal.json').write_text(json.dumps(dict(step='started', dest='h2')))
    assert read_journal('~/migrate/dev/journal.json') == dict(step='started', dest='h2')
    assert read_journal('~/migrate/other/journal.json') is None


def test_a_gone_run_is_only_one_of_this_controller_whose_process_is_no_longer_the_same():
    here = socket.gethostname()
    alive = this_run(here, os.getpid())
    assert not gone_here(alive, here)
    assert gone_here(dict(alive, run=alive['run'] + '0'), here)
    assert not gone_here(dict(alive, run=alive['run'] + '0'), here + '-other')
    assert not gone_here(dict(run='x', controller=here, pid='nope'), here)


PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Hold
      col_agents.tx9.tx9_lease:
        name: dev
        purpose: test
        state: "{{ lease_state }}"
        expect: "{{ lease_expect | default(omit) }}"
      register: held
      ignore_errors: true
    - name: Keep the result
      ansible.builtin.copy:
        content: "{{ held | to_json }}"
        dest: "{{ out }}"
        mode: '0600'
"""


@pytest.fixture
def play(tmp_path):
    path = tmp_path / 'play.yml'
    path.write_text(PLAY)

    def run(state='held', expect=None):
        env = dict(
            os.environ,
            ANSIBLE_CONFIG=os.path.join(REPO_ROOT, 'ansible.cfg'),
            ANSIBLE_NOCOLOR='1',
            TX9_HOME=str(tmp_path / 'home'),
        )
        extra = dict(lease_state=state, out=str(tmp_path / 'r.json'), **(dict(lease_expect=expect) if expect else {}))
        proc = subprocess.Popen(
            [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), str(path), '-e', json.dumps(extra)],
            cwd=REPO_ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            universal_newlines=True,
        )
        output = proc.communicate(timeout=300)[0]
        assert proc.returncode == 0, output
        return proc.pid, json.loads((tmp_path / 'r.json').read_text())

    return run, Leases(str(tmp_path / 'home'))


def test_the_action_holds_the_box_as_the_ansible_playbook_process_of_this_controller(play):
    run, leases = play
    pid, result = run()
    assert result['changed'] and not result.get('failed'), result
    assert (result['lease']['pid'], result['lease']['controller']) == (pid, socket.gethostname())
    assert leases.read('dev')['run'] == result['lease']['run']


def test_a_killed_run_of_this_controller_is_taken_over_by_the_next(play):
    run, leases = play
    _pid, first = run()
    _pid, second = run()
    assert not second.get('failed') and second['taken_over']['run'] == first['lease']['run'], second
    assert leases.read('dev')['run'] == second['lease']['run']


def test_a_live_lease_of_another_controller_is_refused_and_stays(play):
    run, leases = play
    leases.hold('dev', dict(run='far:1:1', controller='far-away', pid=1, purpose='move h1 -> h3'), 600)
    _pid, result = run()
    assert result['failed'] and result['cause'] == 'BOX_BUSY', result
    assert 'pid 1 on controller far-away' in result['msg'] and result['holder']['run'] == 'far:1:1'
    _pid, released = run('released')
    assert not released['changed'] and leases.read('dev')['run'] == 'far:1:1'
    assert time.time() < leases.read('dev')['until']


def test_a_journal_that_cannot_be_read_fails_the_hold_and_leaves_no_lease(play, tmp_path):
    run, leases = play
    journal = tmp_path / 'journal.json'
    journal.write_text(' ' * (READ_LIMIT + 1))
    _pid, result = run(expect=dict(journal=str(journal), step='started', dest='b'))
    assert result['failed'] and result['cause'] == 'STATE_HOME', result
    assert leases.read('dev') is None


def test_prune_removes_expired_leases_only_and_leaves_live_ones_and_files_that_are_not_leases(tmp_path):
    leases = Leases(str(tmp_path))
    assert leases.prune_expired(check_mode=False) == [] and not os.path.exists(leases.dir)
    leases.hold('old', dict(run='r:1:1'), -1)
    leases.hold('live', dict(run='r:2:2'), 600)
    with open(leases.path('junk'), 'w') as handle:
        handle.write('not json')
    assert leases.prune_expired(check_mode=True) == ['old'] and leases.read('old') is not None
    assert leases.prune_expired(check_mode=False) == ['old']
    assert leases.read('old') is None and leases.read('live')['run'] == 'r:2:2'
    assert os.path.exists(leases.path('junk'))
