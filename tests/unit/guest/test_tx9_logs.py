# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9-logs: redaction, levels, rotation, the restart back-off and the capture of a real child."""


import json
import os
import signal
import subprocess
import sys
import time

import pytest

GUEST = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))), 'assets', 'guest')
TOKEN = '0123456789abcdef' * 4
CAPTURE = os.path.join(GUEST, 'tx9-logs')


def wait_for(check, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


def state_of(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def records(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def redact(logs):
    return logs.Redactor({'BOXD_EXECUTOR_TOKEN': TOKEN, 'HOME': '/data/home/agent', 'GITHUB_TOKEN': 'short'})


def test_the_box_token_is_redacted_wherever_it_appears(redact):
    assert redact('connecting with %s now' % TOKEN) == 'connecting with [REDACTED] now'
    assert TOKEN not in redact('url=http://executor:4788/mcp?x=%s' % TOKEN)


def test_an_authorization_bearer_header_is_stored_without_its_credential(redact):
    assert redact('Authorization: Bearer x') == 'Authorization: [REDACTED]'
    assert redact('> proxy-authorization: Basic dXNlcjpwYXNz') == '> proxy-authorization: [REDACTED]'
    assert redact('curl -H "Authorization: Bearer abc.def"') == 'curl -H "Authorization: [REDACTED]'


def test_a_bare_bearer_credential_is_redacted(redact):
    assert redact('sent bearer eyJhbGciOi.J9x_y-z') == 'sent bearer [REDACTED]'


def test_sk_style_api_keys_and_github_tokens_are_redacted(redact):
    line = 'keys sk-ant-api03-AbCdEfGhIjKlMnOp and ghp_abcdefghijklmnopqrstuvwxyz0123 end'
    assert redact(line) == 'keys [REDACTED] and [REDACTED] end'


def test_cookie_headers_are_redacted(redact):
    assert redact('Set-Cookie: session=abc; Path=/') == 'Set-Cookie: [REDACTED]'
    assert redact('cookie: a=b') == 'cookie: [REDACTED]'


@pytest.mark.parametrize('line, expected', [
    ('token=abc123', 'token=[REDACTED]'),
    ('access_token: abc123', 'access_token: [REDACTED]'),
    ('{"refresh_token": "a b c", "n": 1}', '{"refresh_token": "[REDACTED]", "n": 1}'),
    ("password='hunter 2' user=x", "password='[REDACTED]' user=x"),
    ('https://x/cb?id_token%3Dabc&state=1', 'https://x/cb?id_token%3D[REDACTED]&state=1'),
    ('OPENAI_API_KEY=abcdef', 'OPENAI_API_KEY=[REDACTED]'),
    ('client_secret = s3cr3t', 'client_secret = [REDACTED]'),
])
def test_secret_keys_followed_by_equals_colon_or_an_encoded_equals_lose_their_value(redact, line, expected):
    assert redact(line) == expected


@pytest.mark.parametrize('line', [
    'max_tokens=4096 input_tokens: 12',
    'token_count=5',
    'the gateway started',
    'HOME=/data/home/agent',
])
def test_ordinary_text_and_token_counts_are_left_alone(redact, line):
    assert redact(line) == line


def test_short_environment_values_are_not_treated_as_secrets(redact):
    assert redact('short and sweet') == 'short and sweet'


def test_redaction_is_stable_when_applied_twice(redact):
    once = redact('Authorization: Bearer x token=%s' % TOKEN)
    assert redact(once) == once


@pytest.mark.parametrize('name, sensitive', [
    ('BOXD_EXECUTOR_TOKEN', True), ('GHTOKEN', True), ('DB_PASSWORD', True), ('AWS_SECRET_ACCESS_KEY', True),
    ('ANTHROPIC_API_KEY', True), ('HTTP_COOKIE', True), ('TOKENIZERS_PARALLELISM', False), ('HOME', False),
])
def test_environment_names_that_hold_secrets_are_recognised(logs, name, sensitive):
    assert logs.sensitive_env_name(name) is sensitive


@pytest.mark.parametrize('line, level', [
    ('2026-01-01 ERROR something broke', 'error'),
    ('[WARN] disk almost full', 'warning'),
    ('level=debug msg=x', 'debug'),
    ('{"level": "info", "msg": "x"}', 'info'),
    ('INFO:root:hello', 'info'),
    ('no error here, just words', None),
])
def test_the_level_is_read_from_the_line_when_it_says_one(logs, line, level):
    assert logs.detect_level(line) == level


def test_the_log_rotates_before_a_write_would_pass_the_size_limit(logs, tmp_path):
    path = str(tmp_path / 'x.jsonl')
    log = logs.RotatingFile(path, max_bytes=1024, max_files=3)
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


def test_a_log_destination_that_is_a_symlink_or_a_fifo_is_rejected_without_blocking(logs, tmp_path):
    os.symlink('/etc/passwd', str(tmp_path / 'link.jsonl'))
    with pytest.raises(logs.LogFileError):
        logs.RotatingFile(str(tmp_path / 'link.jsonl'))
    os.mkfifo(str(tmp_path / 'fifo.jsonl'))
    started = time.monotonic()
    with pytest.raises(logs.LogFileError):
        logs.RotatingFile(str(tmp_path / 'fifo.jsonl'))
    assert time.monotonic() - started < 1


def test_the_restart_delay_doubles_per_fast_failure_up_to_its_cap(logs):
    assert [logs.restart_delay(1, 10, n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_the_restart_policy_gives_up_after_repeated_fast_failures_only(logs):
    policy = logs.RestartPolicy(base=1, maximum=30, give_up_after=3, fast_seconds=10)
    assert policy.after_run(0.1) == (False, 1)
    assert policy.after_run(0.1) == (False, 2)
    assert policy.after_run(60) == (False, 1), 'a long run resets the count and the delay'
    assert policy.after_run(0.1) == (False, 1)
    assert policy.after_run(0.1) == (False, 2)
    assert policy.after_run(0.1) == (True, None)


def test_a_policy_with_give_up_zero_never_gives_up(logs):
    policy = logs.RestartPolicy(base=1, maximum=4, give_up_after=0, fast_seconds=10)
    assert [policy.after_run(0)[0] for _run in range(20)] == [False] * 20


def capture(tmp_path, args, env=None, **kwargs):
    full_env = dict(os.environ, TX9_BOX_NAME='demo', BOXD_EXECUTOR_TOKEN=TOKEN)
    full_env.update(env or {})
    argv = [sys.executable, CAPTURE, 'capture', '--log-dir', str(tmp_path / 'logs')] + args
    return subprocess.run(argv, env=full_env, capture_output=True, text=True, timeout=60, check=False, **kwargs)


def test_a_captured_childs_lines_become_redacted_json_records_and_its_status_is_kept(tmp_path):
    script = 'echo "token is $BOXD_EXECUTOR_TOKEN"; echo "Authorization: Bearer x" >&2; exit 7'
    done = capture(tmp_path, ['--source', 'service-demo', '--', 'sh', '-c', script])
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


def test_identical_consecutive_lines_are_stored_once_with_a_count(tmp_path):
    capture(tmp_path, ['--source', 'rep', '--no-mirror', '--', 'sh', '-c', 'for i in 1 2 3 4; do echo same; done; echo other'])
    events = [(r['type'], r['message'], (r.get('data') or {}).get('count'))
              for r in records(str(tmp_path / 'logs' / 'rep.jsonl')) if r['stream'] == 'stdout']
    assert events == [('output', 'same', None), ('output_repeated', 'same', 3), ('output', 'other', None)]


def test_a_child_that_keeps_failing_fast_is_given_up_on_and_the_state_file_says_so(tmp_path):
    state = tmp_path / 'svc.state'
    started = time.monotonic()
    done = capture(tmp_path, ['--source', 'service-quick', '--no-mirror', '--state-file', str(state),
                              '--fingerprint', 'fp1', '--restart-delay', '0.1', '--give-up-after', '3',
                              '--fast-seconds', '5', '--', 'sh', '-c', 'exit 3'])
    assert done.returncode == 3
    assert time.monotonic() - started < 5, 'delays of 0.1 and 0.2 s, then it gives up'
    data = json.loads(state.read_text())
    assert data['state'] == 'gave-up' and data['fingerprint'] == 'fp1'
    assert data['restarts'] == 2 and data['fast_failures'] == 3 and data['last_exit'] == 3
    assert 'gave up after 3 fast failures' in data['detail']
    kinds = [r['type'] for r in records(str(tmp_path / 'logs' / 'service-quick.jsonl'))]
    assert kinds.count('process_start') == 3 and kinds.count('process_restart') == 2
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
    try:
        assert wait_for(lambda: log.exists() and 'ready' in log.read_text())
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 143
        assert time.monotonic() - started < 4
    finally:
        if proc.poll() is None:
            proc.kill()


def test_capture_refuses_a_source_name_that_could_leave_the_log_directory(tmp_path):
    done = capture(tmp_path, ['--source', '../x', '--', 'true'])
    assert done.returncode == 2 and '--source' in done.stderr


def test_capture_without_a_command_prints_usage(tmp_path):
    done = capture(tmp_path, ['--source', 'x'])
    assert done.returncode == 2 and 'usage' in done.stderr


def test_the_redact_filter_copies_stdin_to_stdout_redacted():
    done = subprocess.run([sys.executable, CAPTURE, 'redact'], input='a Bearer q1w2e3\nplain\n', capture_output=True,
                          text=True, check=False, timeout=30)
    assert (done.returncode, done.stdout) == (0, 'a Bearer [REDACTED]\nplain\n')
