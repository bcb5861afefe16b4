# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Durable quiesce, the single-writer gateway and custom services in a real box.

The gateway cannot talk to a real chat service here, so the agent container
gets TX9_GATEWAY_ARGV: a stand-in process that hb starts, supervises and
stops exactly as it would `hermes gateway run`. The workload loop runs with
its real 20-second period. The tests run in file order on one box.
"""


import json
import time

import docker
import pytest

from guest_pair import Box, eventually, post_initialize

PHRASE = 'I_CONFIRM_NO_OTHER_GATEWAY_USES_THIS_IDENTITY'
LOOP_PERIOD = 20
STAND_IN = 'tx9-test-gateway'
GATEWAY_ARGV = ['python3', '-u', '-c', 'import time\nprint("stand-in gateway up")\nwhile True: time.sleep(1)', STAND_IN]
SERVICES = '/data/home/agent/.config/hermes-box/services.d'
PLANTED = 'planted-secret-4711'
TICKER = '''#!/bin/sh
echo "ticker up with token $BOXD_EXECUTOR_TOKEN, Authorization: Bearer %s"
while true; do sleep 1; done
''' % PLANTED


@pytest.fixture(scope='module')
def box(built_image):
    client = docker.from_env(version='auto', timeout=120)
    pair = Box(client, built_image['tag'], agent_env={'TX9_GATEWAY_ARGV': json.dumps(GATEWAY_ARGV)})
    try:
        pair.start()
        eventually(lambda: post_initialize(pair.host_port, pair.token) == 200)
        eventually(lambda: pair.status()['workload'])
        yield pair
    finally:
        pair.remove()


def put_service(box, name, body):
    """Write an executable drop-in as the agent (the body travels as an argument, not through a shell)."""
    code, out = box.run(box.agent, ['python3', '-c', 'import sys, os\nopen(sys.argv[1], "w").write(sys.argv[2])\n'
                                    'os.chmod(sys.argv[1], 0o755)', '%s/%s' % (SERVICES, name), body])
    assert code == 0, out


def running(box):
    """Which of the test's processes run in the agent container: {'gateway': bool, 'ticker': bool}."""
    code, out = box.run(box.agent, ['ps', '-eo', 'pid,args'], user='root')
    assert code == 0, out
    lines = [line for line in out.splitlines() if 'tx9-logs' not in line and 'ps -eo' not in line]
    return {'gateway': any(STAND_IN in line for line in lines),
            'ticker': any('%s/ticker' % SERVICES in line for line in lines)}


def services(box):
    code, out = box.hb('services', '--json')
    assert code == 0, out
    return dict((s['name'], s) for s in json.loads(out.strip().splitlines()[-1])['services'])


def test_gateway_enable_without_the_exact_phrase_is_refused(box):
    for args in ([], ['--confirm-single-writer'], ['--confirm-single-writer', 'yes'],
                 ['--confirm-single-writer', PHRASE.lower()]):
        code, out = box.hb('gateway-enable', *args)
        assert code == 1, (args, out)
        assert 'hb gateway-enable: ' in out and PHRASE in out
    assert box.status()['gateway']['state'] == 'disabled'
    assert not running(box)['gateway']


def test_gateway_enable_with_the_phrase_and_a_service_drop_in_both_run(box):
    put_service(box, 'ticker', TICKER)
    code, out = box.hb('services-reload')
    assert code == 0 and 'service ticker: started' in out, out
    code, out = box.hb('gateway-enable', '--confirm-single-writer', PHRASE)
    assert code == 0 and 'enabled and running' in out, out
    assert eventually(lambda: running(box) == {'gateway': True, 'ticker': True}, timeout=60)
    status = box.status()
    assert status['gateway']['state'] == 'running' and status['services']['running'] == 1


def last_exit(box, source):
    """The message of the last process_exit event its log capture wrote to /data/logs/SOURCE.jsonl."""
    code, out = box.run(box.agent, ['cat', '/data/logs/%s.jsonl' % source])
    assert code == 0, out
    exits = [record['message'] for record in map(json.loads, out.splitlines()) if record['type'] == 'process_exit']
    assert exits, 'no process_exit in %s.jsonl:\n%s' % (source, out[-3000:])
    return exits[-1]


def test_hb_down_stops_the_gateway_and_a_test_service_with_term_before_it_returns(box):
    code, out = box.hb('down')
    assert code == 0, out
    assert running(box) == {'gateway': False, 'ticker': False}
    # TERM ended both, so hb down never waited out the stop grace for a KILL (how fast it is, tests/bench says).
    assert 'python3 exited with signal 15 ' in last_exit(box, 'hermes')
    assert 'ticker exited with signal 15 ' in last_exit(box, 'service-ticker')
    assert box.hb('is-paused') == (0, 'quiesced by user\n')


def test_neither_restarts_across_two_loop_periods(box):
    time.sleep(2 * LOOP_PERIOD + 5)
    status = box.status()
    assert status['workload'], 'the loop is alive and passing; it just starts nothing'
    assert running(box) == {'gateway': False, 'ticker': False}
    assert services(box)['ticker']['state'] == 'stopped'
    assert status['gateway']['state'] == 'stopped' and status['quiesced_by'] == 'user'


def test_neither_restarts_across_a_container_restart(box):
    box.agent.restart(timeout=10)
    eventually(lambda: box.status()['workload'], timeout=180)
    time.sleep(LOOP_PERIOD + 5)
    assert running(box) == {'gateway': False, 'ticker': False}
    assert box.status()['quiesced_by'] == 'user', 'the quiesce is on /data, so it survives the restart'
    code, out = box.run(box.agent, ['cat', '/data/logs/agent.jsonl'])
    assert 'quiesced by user: services and the gateway stay stopped' in out


def test_hb_up_brings_the_service_and_the_gateway_back(box):
    code, out = box.hb('up')
    assert code == 0 and 'resumed' in out, out
    assert eventually(lambda: running(box) == {'gateway': True, 'ticker': True}, timeout=60)
    assert box.hb('is-paused')[0] == 1


def test_a_services_stdout_shows_up_in_the_durable_log_with_the_planted_token_redacted(box):
    code, out = box.run(box.agent, ['cat', '/data/logs/service-ticker.jsonl'])
    assert code == 0, out
    messages = [json.loads(line)['message'] for line in out.splitlines()]
    assert 'ticker up with token [REDACTED], Authorization: [REDACTED]' in messages
    code, out = box.run(box.agent, ['grep', '-r', '-l', '-e', box.token, '-e', PLANTED, '/data/logs'])
    assert code == 1, 'no log file holds the token or the planted secret: %s' % out
    code, out = box.hb('logs', 'service-ticker', '-n', '5')
    assert code == 0 and 'ticker up with token [REDACTED]' in out


def test_a_service_that_exits_at_once_is_given_up_on_and_reported(box):
    put_service(box, 'quick', '#!/bin/sh\necho "no config, giving up" >&2\nexit 3\n')
    assert box.hb('services-reload')[0] == 0

    def gave_up():
        entry = services(box)['quick']
        return entry if entry['state'] == 'gave-up' else None

    entry = eventually(gave_up, timeout=180)
    assert entry['last_exit'] == 3 and 'gave up after 5 fast failures' in entry['detail']
    code, out = box.hb('services')
    assert 'quick: gave-up' in out and 'hb services-reload' in out
    assert box.status()['services']['gave_up'] == ['quick']
    code, out = box.hb('doctor')
    assert code == 1 and 'FAIL services: quick gave-up' in out
    time.sleep(LOOP_PERIOD + 2)
    assert services(box)['quick']['state'] == 'gave-up', 'the loop does not retry what it gave up on'
    code, out = box.run(box.agent, ['rm', '%s/quick' % SERVICES])
    assert code == 0, out
    assert box.hb('services-reload')[0] == 0


def test_gateway_disable_stops_the_gateway_and_keeps_it_stopped(box):
    code, out = box.hb('gateway-disable')
    assert code == 0 and 'disabled and stopped' in out, out
    assert running(box) == {'gateway': False, 'ticker': True}
    assert box.status()['gateway']['state'] == 'disabled'


def test_hb_doctor_in_the_healthy_box_lists_each_check_and_exits_0(box):
    code, out = box.hb('doctor')
    assert code == 0, out
    for check in ('tool claude', 'tool codex', 'tool hermes', 'tool executor', 'home writable', 'logs writable',
                  'profile', 'workload loop', 'executor', 'wiring', 'gateway', 'services', 'hermes state'):
        assert 'ok   %s: ' % check in out, check


def test_after_a_restart_the_enabled_gateway_and_services_return_and_a_stop_still_ends_with_143(box):
    code, out = box.hb('gateway-enable', '--confirm-single-writer', PHRASE)
    assert code == 0, out
    box.agent.restart(timeout=10)
    assert eventually(lambda: running(box) == {'gateway': True, 'ticker': True}, timeout=90), \
        'the first pass after boot starts what is enabled'
    box.agent.stop(timeout=10)
    # 143, not 137: the loop stopped them and exited on TERM, before Docker's SIGKILL 10 s later.
    assert box.agent.wait(timeout=600)['StatusCode'] == 143, 'the loop stopped them and exited; nothing was SIGKILLed'
    box.agent.start()
    eventually(lambda: box.status()['workload'], timeout=180)
    code, out = box.run(box.agent, ['cat', '/data/logs/agent.jsonl'])
    assert 'service ticker: stopped (the container is stopping)' in out
    assert 'gateway: stopped (the container is stopping)' in out
