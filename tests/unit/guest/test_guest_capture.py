# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9-logs capture: a real child's lines as JSON records, its restarts, its signals and its stop."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys

from ansible_collections.col_agents.tx9.tests.processes import alive
from guest_helpers import GUEST, exit_messages, group_members, wait_for
from tx9guest import capture

TOKEN = '0123456789abcdef' * 4
CAPTURE = os.path.join(GUEST, 'tx9-logs')


def state_of(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def run_capture(tmp_path, args, env=None, **kwargs):
    full_env = dict(os.environ, TX9_BOX_NAME='demo', BOXD_EXECUTOR_TOKEN=TOKEN)
    full_env.update(env or {})
    argv = [sys.executable, CAPTURE, 'capture', '--log-dir', str(tmp_path / 'logs')] + args
    return subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=60, check=False, **kwargs)


def test_the_restart_delay_doubles_per_fast_failure_up_to_its_cap():
    assert [capture.restart_delay(1, 10, n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_the_restart_policy_gives_up_after_repeated_fast_failures_only():
    policy = capture.RestartPolicy(base=1, maximum=30, give_up_after=3, fast_seconds=10)
    assert policy.after_run(0.1) == (False, 1)
    assert policy.after_run(0.1) == (False, 2)
    assert policy.after_run(60) == (False, 1), 'a long run resets the count and the delay'
    assert policy.after_run(0.1) == (False, 1)
    assert policy.after_run(0.1) == (False, 2)
    assert policy.after_run(0.1) == (True, None)


def test_a_policy_with_give_up_zero_never_gives_up():
    policy = capture.RestartPolicy(base=1, maximum=4, give_up_after=0, fast_seconds=10)
    assert [policy.after_run(0)[0] for _run in range(20)] == [False] * 20


def test_identical_consecutive_lines_are_stored_once_with_a_count(tmp_path):
    run_capture(tmp_path, ['--source', 'rep', '--no-mirror', '--', 'sh', '-c', 'for i in 1 2 3 4; do echo same; done; echo other'])
    events = [(r['type'], r['message'], (r.get('data') or {}).get('count'))
              for r in records(str(tmp_path / 'logs' / 'rep.jsonl')) if r['stream'] == 'stdout']
    assert events == [('output', 'same', None), ('output_repeated', 'same', 3), ('output', 'other', None)]


def test_a_child_that_keeps_failing_fast_is_given_up_on_and_the_state_file_says_so(tmp_path):
    state = tmp_path / 'svc.state'
    done = run_capture(tmp_path, ['--source', 'service-quick', '--no-mirror', '--state-file', str(state),
                                  '--fingerprint', 'fp1', '--restart-delay', '0.1', '--give-up-after', '3',
                                  '--fast-seconds', '5', '--', 'sh', '-c', 'exit 3'])
    assert done.returncode == 3
    data = json.loads(state.read_text())
    assert data['state'] == 'gave-up' and data['fingerprint'] == 'fp1'
    assert data['restarts'] == 2 and data['fast_failures'] == 3 and data['last_exit'] == 3
    assert 'gave up after 3 fast failures' in data['detail']
    events = records(str(tmp_path / 'logs' / 'service-quick.jsonl'))
    kinds = [r['type'] for r in events]
    assert kinds.count('process_start') == 3 and kinds.count('process_restart') == 2
    assert [r['message'] for r in events if r['type'] == 'process_restart'] == [
        'restarting in 0.1s (restart 1)', 'restarting in 0.2s (restart 2)'], 'delays of 0.1 and 0.2 s, then it gives up'
    assert kinds[-1] == 'process_gave_up'


def test_a_stop_signal_reaches_the_child_and_the_capture_exits_128_plus_the_signal(tmp_path):
    state = tmp_path / 's.state'
    argv = [sys.executable, CAPTURE, 'capture', '--source', 'sig', '--log-dir', str(tmp_path / 'logs'), '--no-mirror',
            '--state-file', str(state), '--restart-delay', '1', '--', 'sleep', '300']
    proc = subprocess.Popen(argv)
    try:
        assert wait_for(lambda: state_of(state).get('child_pid'))
        child = json.loads(state.read_text())['child_pid']
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 143
        assert not os.path.exists('/proc/%d' % child) or open('/proc/%d/stat' % child).read().split()[2] == 'Z'
        assert json.loads(state.read_text())['state'] == 'stopped', 'a stopped child is not restarted'
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_child_that_ignores_term_is_killed_after_the_stop_grace(tmp_path):
    state = tmp_path / 's.state'
    script = 'trap "" TERM; echo ready; while true; do sleep 0.1; done'
    argv = [sys.executable, CAPTURE, 'capture', '--source', 'stubborn', '--log-dir', str(tmp_path / 'logs'),
            '--no-mirror', '--state-file', str(state), '--stop-grace', '1', '--', 'sh', '-c', script]
    proc = subprocess.Popen(argv)
    log = tmp_path / 'logs' / 'stubborn.jsonl'
    child = None
    try:
        assert wait_for(lambda: log.exists() and 'ready' in log.read_text())
        child = state_of(state)['child_pid']
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
        # The child that ignored TERM was ended by the KILL the stop grace sends, not by anything else.
        assert re.search(r'^sh exited with signal 9 ', exit_messages(str(log))[-1]), exit_messages(str(log))
        assert wait_for(lambda: not alive(child), 2.0), 'the child that ignored TERM is gone'
        assert wait_for(lambda: not group_members(child), 2.0), 'and so is everything it started'
    finally:
        if proc.poll() is None:
            proc.kill()
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child, signal.SIGKILL)


def test_capture_refuses_a_source_name_that_could_leave_the_log_directory(tmp_path):
    done = run_capture(tmp_path, ['--source', '../x', '--', 'true'])
    assert done.returncode == 2 and '--source' in done.stderr


def test_capture_without_a_command_prints_usage(tmp_path):
    done = run_capture(tmp_path, ['--source', 'x'])
    assert done.returncode == 2 and 'usage' in done.stderr


def test_a_captured_childs_lines_become_redacted_json_records_and_its_status_is_kept(tmp_path):
    script = 'echo "token is $BOXD_EXECUTOR_TOKEN"; echo "Authorization: Bearer x" >&2; exit 7'
    done = run_capture(tmp_path, ['--source', 'service-demo', '--', 'sh', '-c', script])
    assert done.returncode == 7
    assert TOKEN not in done.stdout + done.stderr, 'the mirror is redacted too'
    path = tmp_path / 'logs' / 'service-demo.jsonl'
    assert oct(os.stat(str(path)).st_mode & 0o777) == '0o600'
    assert TOKEN not in path.read_text()
    events = records(str(path))
    outputs = [(r['stream'], r['message']) for r in events if r['type'] == 'output']
    assert sorted(outputs) == [('stderr', 'Authorization: [REDACTED]'), ('stdout', 'token is [REDACTED]')]
    first = events[0]
    assert first['schema'] == 'tx9.event.v1' and first['box'] == 'demo' and first['source'] == 'service-demo'
    assert first['timestamp'].endswith('Z') and first['type'] == 'process_start'
    assert events[-1]['type'] == 'process_exit' and events[-1]['data']['exit_code'] == 7


def test_the_redact_filter_copies_stdin_to_stdout_redacted():
    done = subprocess.run([sys.executable, CAPTURE, 'redact'], input='a Bearer q1w2e3\nplain\n', capture_output=True,
                          text=True, check=False, timeout=30)
    assert (done.returncode, done.stdout) == (0, 'a Bearer [REDACTED]\nplain\n')
