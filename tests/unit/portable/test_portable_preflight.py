# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_preflight: whether a host can receive a box, each check named, the refusal's cause from the first."""


import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._portable import preflight

MIB = 1024 ** 2


def test_needs_on_one_filesystem_are_added_up_against_its_free_bytes():
    disks = {'/work': (1, 30 * MIB), '/var/lib/docker/volumes': (1, 30 * MIB), '/other': (2, 5 * MIB)}

    def measure(path):
        device, free = disks[path]
        return device, free, path
    verdict = preflight.space_check([('the archive', '/work', 20 * MIB), ('the payload', '/var/lib/docker/volumes', 20 * MIB),
                                     ('a copy', '/other', MIB)], measure)
    assert verdict['ok'] is False
    assert '41943040 bytes needed, 31457280 free' in verdict['detail']
    assert '/other' not in verdict['detail']
    alone = preflight.space_check([('the archive', '/work', 20 * MIB), ('a copy', '/other', MIB)], measure)
    assert alone['ok'] is True


def test_a_directory_not_made_yet_is_measured_on_its_closest_existing_ancestor(full_disk):
    device, free, where = preflight.filesystem_of(str(full_disk / 'migrate' / 'dev'))
    assert where == str(full_disk) and free <= MIB
    verdict = preflight.space_check([('the archive', str(full_disk / 'migrate'), 2 * MIB)])
    assert verdict['ok'] is False and str(full_disk / 'migrate') in verdict['detail']


def test_more_cpus_than_the_host_has_fails_the_options_check_naming_the_value():
    verdict = preflight.options_check(dict(agent_cpus=4.0), 2)
    assert verdict == dict(name='options', ok=False, detail=verdict['detail'])
    assert 'agent_cpus=4.0' in verdict['detail'] and 'only 2 CPUs' in verdict['detail']
    assert preflight.options_check(dict(agent_cpus=2.0, executor_publish='127.0.0.1:4788'), 2)['ok'] is True


def test_without_a_box_name_only_space_is_checked_and_no_engine_is_asked_for(tmp_path):
    def connect():
        raise AssertionError('no engine is needed')
    result = preflight.Preflight(connect, None, dict(space=[dict(path=str(tmp_path), bytes=1, what='the archive')])).run()
    assert result['ok'] is True and [c['name'] for c in result['checks']] == ['space']


def test_an_engine_that_does_not_answer_refuses_with_its_cause_and_reports_the_space_too(tmp_path):
    def connect():
        raise Tx9Error('The Docker engine at unix:///x does not answer', 'DOCKER_UNAVAILABLE')
    job = preflight.Preflight(connect, None, dict(name='dev', space=[dict(path=str(tmp_path), bytes=10 ** 18)]))
    with pytest.raises(Tx9Error) as caught:
        job.run()
    assert caught.value.cause == 'DOCKER_UNAVAILABLE'
    assert caught.value.details['failed_checks'] == ['engine', 'space']
    assert 'box dev' in caught.value.reason and 'unix:///x' in caught.value.reason
    assert '1000000000000000000 bytes needed' in caught.value.reason


def test_report_only_returns_the_failed_checks_without_failing(tmp_path):
    job = preflight.Preflight(None, None, dict(space=[dict(path=str(tmp_path), bytes=10 ** 18)], fail_on_error=False))
    result = job.run()
    assert result['ok'] is False and result['failed_checks'] == ['space']


def test_a_peer_command_that_runs_true_is_reported_reached_and_is_not_a_check(tmp_path):
    result = preflight.Preflight(None, None, dict(space=[], peer=['env'])).run()
    assert result['peer'] == dict(reached=True, detail='reached')
    assert [c['name'] for c in result['checks']] == ['space'] and result['ok'] is True


def test_an_unreachable_peer_is_reported_with_its_last_error_line_and_never_fails_the_preflight(tmp_path):
    argv = ['sh', '-c', 'echo "ssh: connecting" >&2; echo "ssh: connect to host old port 22: Connection refused" >&2; exit 255',
            'ssh']
    result = preflight.Preflight(None, None, dict(space=[], peer=argv)).run()
    assert result['ok'] is True
    assert result['peer'] == dict(reached=False, detail='ssh: connect to host old port 22: Connection refused')


def test_a_silent_failure_says_its_exit_code_and_a_missing_command_says_it_cannot_run():
    assert preflight.reach_peer(['sh', '-c', 'exit 7', 'ssh']) == dict(reached=False, detail='exit code 7')
    missing = preflight.reach_peer(['/nonexistent/ssh', '-o', 'BatchMode=yes'])
    assert missing['reached'] is False and missing['detail'].startswith('it cannot run')


def test_a_peer_that_does_not_answer_in_time_is_not_reached():
    assert preflight.reach_peer(['sh', '-c', 'sleep 5', 'ssh'], timeout=0.2) == dict(reached=False, detail='no answer within 0.2 s')


def test_without_a_peer_command_nothing_is_run_and_no_peer_is_reported(tmp_path):
    assert 'peer' not in preflight.Preflight(None, None, dict(space=[])).run()
