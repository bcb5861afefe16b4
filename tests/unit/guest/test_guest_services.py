# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Custom services: which entries count, how they run, stop, restart and give up."""

import json
import os
import re

import pytest

from ansible_collections.col_agents.tx9.tests.processes import alive
from guest_helpers import exit_messages, wait_for
from tx9guest import supervise, quiesce, services, statefile

SLEEPER = '#!/bin/sh\necho "up with $EXECUTOR_MCP_TOKEN"\nexec sleep 300\n'


def last_exit(ctx, name):
    """The message of the last process_exit event in the service's log."""
    return exit_messages(os.path.join(ctx.paths.logs, 'service-%s.jsonl' % name))[-1]


def service(ctx, name):
    return next(s for s in services.services_report(ctx)['services'] if s['name'] == name)


@pytest.mark.parametrize('name', ['web', 'a', '0day', 'my-api_2', 'x' * 63])
def test_names_of_lower_case_letters_digits_dash_and_underscore_are_services(name):
    assert services.SERVICE_NAME_RE.match(name)


@pytest.mark.parametrize('name', ['Web', '-web', '_web', '.hidden', 'web.sh', 'web~', 'a b', 'x' * 64, 'wéb'])
def test_other_names_are_unsafe(name):
    assert not services.SERVICE_NAME_RE.match(name)


def test_every_ignored_entry_is_reported_with_its_reason(box, write_service):
    ctx = box()
    write_service(ctx, 'good', '#!/bin/sh\n')
    write_service(ctx, 'Bad', '#!/bin/sh\n')
    write_service(ctx, '.swp', '#!/bin/sh\n')
    write_service(ctx, 'plain', '#!/bin/sh\n', mode=0o644)
    os.symlink('/bin/true', os.path.join(ctx.paths.services_dir, 'link'))
    os.mkdir(os.path.join(ctx.paths.services_dir, 'folder'))
    os.mkfifo(os.path.join(ctx.paths.services_dir, 'pipe'))
    found, ignored = services.scan_services(ctx.paths.services_dir)
    assert [s.name for s in found] == ['good']
    reasons = dict((name, reason.split(' (')[0]) for name, reason in ignored)
    assert reasons == {'.swp': 'unsafe name', 'Bad': 'unsafe name', 'folder': 'not a regular file',
                       'link': 'symlink', 'pipe': 'not a regular file', 'plain': 'not executable'}


def test_a_symlinked_services_directory_is_not_followed(box, tmp_path):
    ctx = box()
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    (elsewhere / 'evil').write_text('#!/bin/sh\n')
    os.chmod(str(elsewhere / 'evil'), 0o755)
    os.makedirs(os.path.dirname(ctx.paths.services_dir))
    os.symlink(str(elsewhere), ctx.paths.services_dir)
    found, ignored = services.scan_services(ctx.paths.services_dir)
    assert found == [] and 'not a directory' in ignored[0][1]


def test_the_fingerprint_changes_with_the_content(box, write_service):
    ctx = box()
    write_service(ctx, 'web', '#!/bin/sh\necho 1\n')
    first = services.scan_services(ctx.paths.services_dir)[0][0].fingerprint
    write_service(ctx, 'web', '#!/bin/sh\necho 2\n')
    assert services.scan_services(ctx.paths.services_dir)[0][0].fingerprint != first


def test_a_service_runs_with_its_absolute_path_as_argv_and_keeps_its_state_outside_data(live, write_service):
    ctx = live()
    path = write_service(ctx, 'web', '#!/bin/sh\nwhile true; do sleep 1; done\n')
    changes = services.reconcile_services(ctx)
    assert len(changes) == 1 and changes[0].startswith('service web: started')
    entry = wait_for(lambda: service(ctx, 'web')['pid'] and service(ctx, 'web'))
    assert entry['state'] == 'running'
    with open('/proc/%d/cmdline' % entry['pid'], 'rb') as f:
        argv = f.read().split(b'\0')[:-1]
    assert argv == [b'/bin/sh', path.encode()], 'the kernel runs the shebang with the path; nothing is evaluated'
    assert os.path.isfile(ctx.paths.service_state('web'))
    assert ctx.paths.service_state('web').startswith(ctx.paths.runtime)
    assert not ctx.paths.runtime.startswith(ctx.paths.home)
    assert services.reconcile_services(ctx) == [], 'a running, unchanged service is left alone'


def test_a_services_output_is_in_its_durable_log_with_the_token_redacted(live, token, write_service):
    ctx = live()
    write_service(ctx, 'web', SLEEPER)
    services.reconcile_services(ctx)
    log = os.path.join(ctx.paths.logs, 'service-web.jsonl')

    def lines():
        if not os.path.exists(log):
            return None
        with open(log) as f:
            return [json.loads(line) for line in f if '"output"' in line] or None

    records = wait_for(lines)
    assert records[0]['message'] == 'up with [REDACTED]' and records[0]['source'] == 'service-web'
    with open(log) as f:
        assert token not in f.read()


def test_down_stops_every_service_with_term_then_kill_after_the_grace_and_no_pass_restarts_them(live, write_service):
    ctx = live()
    write_service(ctx, 'one', SLEEPER)
    write_service(ctx, 'two', '#!/bin/sh\ntrap "" TERM\nwhile true; do sleep 0.2; done\n')
    services.reconcile_services(ctx)
    pids = [wait_for(lambda n=n: service(ctx, n)['pid']) for n in ('one', 'two')]
    assert quiesce.cmd_down(ctx, []) == 0
    assert not any(alive(pid) for pid in pids)
    # TERM ended the first; the second ignores TERM, so the KILL its capture sends after the stop grace ended it.
    assert re.search(r'^one exited with signal 15 ', last_exit(ctx, 'one'))
    assert re.search(r'^two exited with signal 9 ', last_exit(ctx, 'two'))
    assert services.reconcile_services(ctx) == []
    assert quiesce.run_pass(ctx)[0] == []
    assert [s['state'] for s in services.services_report(ctx)['services']] == ['stopped', 'stopped']


def test_a_quick_service_is_stopped_by_term_without_waiting_for_the_grace(live, write_service):
    ctx = live()
    write_service(ctx, 'web', SLEEPER)
    services.reconcile_services(ctx)
    pid = wait_for(lambda: service(ctx, 'web')['pid'])
    quiesce.cmd_down(ctx, [])
    assert not alive(pid)
    assert re.search(r'^web exited with signal 15 ', last_exit(ctx, 'web'))


def test_up_brings_the_services_back(live, write_service):
    ctx = live()
    write_service(ctx, 'web', SLEEPER)
    quiesce.cmd_down(ctx, [])
    assert service(ctx, 'web')['state'] == 'stopped'
    assert quiesce.cmd_up(ctx, []) == 0
    assert wait_for(lambda: service(ctx, 'web')['state'] == 'running')


def test_a_changed_definition_restarts_the_service_and_a_removed_one_stops(live, write_service):
    ctx = live()
    path = write_service(ctx, 'web', SLEEPER)
    services.reconcile_services(ctx)
    first = wait_for(lambda: service(ctx, 'web')['pid'])
    assert service(ctx, 'web')['state'] == 'running'
    write_service(ctx, 'web', SLEEPER.replace('up with', 'now with'))
    assert service(ctx, 'web')['state'] == 'reload pending'
    assert services.reconcile_services(ctx)[0].startswith('service web: restarted (its definition changed)')
    second = wait_for(lambda: service(ctx, 'web')['pid'])
    assert second != first and not alive(first)
    os.unlink(path)
    assert services.reconcile_services(ctx) == ['service web: stopped (its definition is gone)']
    assert not alive(second)


def test_a_service_that_exits_at_once_is_given_up_on_reported_and_retried_only_on_reload(live, capsys, write_service):
    ctx = live()
    write_service(ctx, 'quick', '#!/bin/sh\necho "missing config" >&2\nexit 3\n')
    services.reconcile_services(ctx)
    entry = wait_for(lambda: service(ctx, 'quick')['state'] == 'gave-up' and service(ctx, 'quick'))
    assert entry['last_exit'] == 3 and 'gave up after 3 fast failures' in entry['detail']
    assert '`hb services-reload`' in entry['detail']
    assert services.reconcile_services(ctx) == [], 'the loop does not restart a service it gave up on'
    services.cmd_services(ctx, [])
    assert 'quick: gave-up' in capsys.readouterr().out
    assert services.cmd_services_reload(ctx, []) == 0
    assert 'service quick: started again' in capsys.readouterr().out


def test_a_service_that_stopped_unexpectedly_is_restarted_by_the_next_pass(live, write_service):
    ctx = live()
    write_service(ctx, 'web', SLEEPER)
    services.reconcile_services(ctx)
    state = wait_for(lambda: (statefile.read_state(ctx.paths.service_state('web')) or {}).get('child_pid') and
                     statefile.read_state(ctx.paths.service_state('web')))
    os.kill(state['pid'], 9)
    wait_for(lambda: not supervise.capture_alive(state))
    assert service(ctx, 'web')['state'] == 'stale'
    assert alive(state['child_pid']), 'the capture died, its child lives on'
    assert services.reconcile_services(ctx)[0].startswith('service web: restarted (it had stopped)')
    assert not alive(state['child_pid']), 'the orphan is ended before a new copy starts'
    assert wait_for(lambda: service(ctx, 'web')['state'] == 'running')


def test_services_json_lists_services_and_ignored_entries(live, capsys, write_service):
    ctx = live()
    write_service(ctx, 'web', SLEEPER)
    write_service(ctx, 'Nope', SLEEPER)
    assert services.cmd_services(ctx, ['--json']) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report['services'][0]['name'] == 'web' and report['services'][0]['state'] == 'not started'
    assert report['ignored'][0]['name'] == 'Nope'
    assert set(report) == {'dir', 'quiesced', 'services', 'ignored'}


def test_services_reload_while_quiesced_starts_nothing_and_says_why(live, capsys, write_service):
    ctx = live()
    write_service(ctx, 'web', SLEEPER)
    quiesce.cmd_down(ctx, ['--by', 'backup'])
    capsys.readouterr()
    assert services.cmd_services_reload(ctx, []) == 0
    assert 'quiesced by backup' in capsys.readouterr().out
    assert service(ctx, 'web')['state'] == 'stopped'
