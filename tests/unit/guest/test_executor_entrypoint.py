# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The executor entrypoint: allowed Host names, the token check, the daemon's environment."""


import os
import pwd

import pytest


def test_executor_is_always_an_allowed_host(entrypoint):
    assert entrypoint.allowed_hosts({}) == ['executor']


def test_extra_hosts_and_the_web_base_url_host_are_allowed(entrypoint):
    env = {'TX9_EXECUTOR_ALLOWED_HOSTS': ' box.example.com, ,10.0.0.5',
           'EXECUTOR_WEB_BASE_URL': 'https://web.example.com:8443/ui'}
    assert entrypoint.allowed_hosts(env) == ['executor', 'box.example.com', '10.0.0.5', 'web.example.com']


def test_allowed_hosts_are_listed_once(entrypoint):
    env = {'TX9_EXECUTOR_ALLOWED_HOSTS': 'Executor,a.test,a.test', 'EXECUTOR_WEB_BASE_URL': 'http://a.test/'}
    assert entrypoint.allowed_hosts(env) == ['executor', 'a.test']


def test_an_ipv6_web_base_url_is_allowed_in_brackets(entrypoint):
    assert entrypoint.allowed_hosts({'EXECUTOR_WEB_BASE_URL': 'http://[fd00::1]:4788'})[-1] == '[fd00::1]'


def test_an_invalid_extra_host_stops_the_container_with_a_message(entrypoint, capsys):
    with pytest.raises(SystemExit) as stop:
        entrypoint.allowed_hosts({'TX9_EXECUTOR_ALLOWED_HOSTS': 'bad host'})
    assert stop.value.code == 1
    assert 'TX9_EXECUTOR_ALLOWED_HOSTS' in capsys.readouterr().err


def test_a_missing_token_stops_the_container_with_a_message(entrypoint, monkeypatch, capsys):
    monkeypatch.delenv('EXECUTOR_MCP_TOKEN', raising=False)
    with pytest.raises(SystemExit):
        entrypoint.read_token()
    assert 'EXECUTOR_MCP_TOKEN is not set' in capsys.readouterr().err


def test_the_daemon_does_not_inherit_the_token_variable(entrypoint, monkeypatch):
    monkeypatch.setenv('EXECUTOR_MCP_TOKEN', 'secret')
    env = entrypoint.child_env(pwd.getpwuid(os.getuid()), '/x/.executor')
    assert 'EXECUTOR_MCP_TOKEN' not in env
    assert env['EXECUTOR_DATA_DIR'] == '/x/.executor'


def test_the_entrypoint_reruns_itself_under_the_log_capture_once(entrypoint, tmp_path):
    capture = tmp_path / 'tx9-logs'
    capture.write_text('#!/bin/sh\n')
    os.chmod(str(capture), 0o755)
    argv = entrypoint.capture_argv('/opt/tx9/bin/tx9-executor-entrypoint', str(capture), {})
    assert argv == [str(capture), 'capture', '--source', 'executor', '--log-dir', '/data/logs', '--stop-grace', '8',
                    '--', '/opt/tx9/bin/tx9-executor-entrypoint']
    assert entrypoint.capture_argv('/x', str(capture), {'TX9_LOGS_CAPTURED': '1'}) is None, 'no second capture'


def test_without_the_capture_installed_the_entrypoint_runs_directly(entrypoint, tmp_path):
    assert entrypoint.capture_argv('/x', str(tmp_path / 'missing'), {}) is None
