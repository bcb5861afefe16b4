# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containers' entrypoints: allowed Host names, the token check, the log capture, the agent's loop."""

import os
import pwd
import re
import socket

import pytest

from guest_helpers import GUEST
from tx9guest import entrypoints, settings


def test_executor_is_always_an_allowed_host():
    assert entrypoints.allowed_hosts({}) == ['executor']


def test_extra_hosts_and_the_web_base_url_host_are_allowed():
    env = {'TX9_EXECUTOR_ALLOWED_HOSTS': ' box.example.com, ,10.0.0.5',
           'EXECUTOR_WEB_BASE_URL': 'https://web.example.com:8443/ui'}
    assert entrypoints.allowed_hosts(env) == ['executor', 'box.example.com', '10.0.0.5', 'web.example.com']


def test_allowed_hosts_are_listed_once():
    env = {'TX9_EXECUTOR_ALLOWED_HOSTS': 'Executor,a.test,a.test', 'EXECUTOR_WEB_BASE_URL': 'http://a.test/'}
    assert entrypoints.allowed_hosts(env) == ['executor', 'a.test']


def test_an_ipv6_web_base_url_is_allowed_in_brackets():
    assert entrypoints.allowed_hosts({'EXECUTOR_WEB_BASE_URL': 'http://[fd00::1]:4788'})[-1] == '[fd00::1]'


def test_an_invalid_extra_host_stops_the_container_with_a_message(capsys):
    with pytest.raises(SystemExit) as stop:
        entrypoints.allowed_hosts({'TX9_EXECUTOR_ALLOWED_HOSTS': 'bad host'})
    assert stop.value.code == 1
    assert 'TX9_EXECUTOR_ALLOWED_HOSTS' in capsys.readouterr().err


def test_a_missing_token_stops_the_container_with_a_message(monkeypatch, capsys):
    monkeypatch.delenv('EXECUTOR_MCP_TOKEN', raising=False)
    with pytest.raises(SystemExit):
        entrypoints.read_token()
    assert 'EXECUTOR_MCP_TOKEN is not set' in capsys.readouterr().err


def test_the_daemon_does_not_inherit_the_token_variable(monkeypatch):
    monkeypatch.setenv('EXECUTOR_MCP_TOKEN', 'secret')
    env = entrypoints.child_env(pwd.getpwuid(os.getuid()), '/x/.executor')
    assert 'EXECUTOR_MCP_TOKEN' not in env
    assert env['EXECUTOR_DATA_DIR'] == '/x/.executor'


IMAGE_PATHS = settings.Paths({})


def test_the_executor_entrypoint_reruns_itself_under_the_log_capture_once(tmp_path):
    capture = tmp_path / 'tx9-logs'
    capture.write_text('#!/bin/sh\n')
    os.chmod(str(capture), 0o755)
    argv = entrypoints.capture_argv('/opt/tx9/bin/tx9-executor-entrypoint', IMAGE_PATHS, str(capture), {})
    assert argv == [str(capture), 'capture', '--source', 'executor', '--log-dir', '/data/logs', '--stop-grace', '8',
                    '--', '/opt/tx9/bin/tx9-executor-entrypoint']
    assert entrypoints.capture_argv('/x', IMAGE_PATHS, str(capture), {'TX9_LOGS_CAPTURED': '1'}) is None, \
        'no second capture'


def test_without_the_capture_installed_the_executor_entrypoint_runs_directly(tmp_path):
    assert entrypoints.capture_argv('/x', IMAGE_PATHS, str(tmp_path / 'missing'), {}) is None


def test_the_executor_entrypoint_captures_with_the_tx9_logs_of_the_runtime_bin_folder_by_default(tmp_path):
    paths = settings.Paths({})
    paths.bin_dir = str(tmp_path)
    installed = tmp_path / 'tx9-logs'
    installed.write_text('#!/bin/sh\n')
    os.chmod(str(installed), 0o755)

    argv = entrypoints.capture_argv('/x', paths, environ={})

    assert argv is not None and argv[0] == str(installed)
    assert argv[-2:] == ['--', '/x']
    os.chmod(str(installed), 0o644)
    assert entrypoints.capture_argv('/x', paths, environ={}) is None, 'a tx9-logs that cannot run is not used'


def test_the_runtime_bin_folder_is_where_the_image_installs_tx9_logs():
    assert settings.Paths({}).bin_dir == '/opt/tx9/bin'
    with open(os.path.join(GUEST, '..', 'provision', 'provision.sh')) as handle:
        provision = handle.read()
    assert 'TX9=/opt/tx9\n' in provision
    assert re.search(r'for f in [^;]*\btx9-logs\b[^;]*; do\n\s*install -m 0755 "\$TX9/guest/\$f" "\$TX9/bin/\$f"',
                     provision), 'provision.sh installs tx9-logs into /opt/tx9/bin'


def test_the_agent_entrypoint_runs_the_loop_as_the_agent_under_its_log_capture():
    assert entrypoints.agent_loop_argv(IMAGE_PATHS) == [
        'setpriv', '--reuid=agent', '--regid=agent', '--init-groups', '--',
        '/opt/tx9/bin/tx9-logs', 'capture', '--source', 'agent', '--log-dir', '/data/logs',
        '--restart-delay', '2', '--restart-max-delay', '30', '--give-up-after', '0', '--stop-grace', '9',
        '--', '/opt/tx9/bin/hb', 'workload']


def test_the_agent_loop_holds_the_groups_of_its_host_mounts_besides_its_own(monkeypatch):
    account = pwd.getpwuid(os.getuid())
    monkeypatch.setattr(entrypoints, 'agent_account', lambda: account)
    own = os.getgrouplist(account.pw_name, account.pw_gid)

    groups = entrypoints.loop_groups({'TX9_AGENT_MOUNT_GIDS': '4271,4272,4271'})

    assert groups == own + [gid for gid in (4271, 4272) if gid not in own]
    argv = entrypoints.agent_loop_argv(IMAGE_PATHS, groups)
    assert argv[:5] == ['setpriv', '--reuid=agent', '--regid=agent',
                        '--groups=' + ','.join(str(gid) for gid in groups), '--']
    assert '--init-groups' not in argv


def test_without_host_mount_groups_the_agent_loop_keeps_only_its_own_groups():
    assert entrypoints.loop_groups({}) is None
    assert entrypoints.loop_groups({'TX9_AGENT_MOUNT_GIDS': ' '}) is None


@pytest.mark.parametrize('value', ['0', '-5', '12a', '4271;id', '4271 4272', '1,,2', '4294967295', '99999999999',
                                   ','.join(str(1000 + n) for n in range(65))])
def test_an_invalid_mount_group_list_stops_the_agent_entrypoint_before_init_with_a_message(
        monkeypatch, capsys, value):
    monkeypatch.setenv('TX9_AGENT_MOUNT_GIDS', value)
    monkeypatch.setattr(entrypoints.cli, 'main', lambda argv: pytest.fail('init must not run'))
    monkeypatch.setattr(entrypoints.os, 'execvp', lambda *args: pytest.fail('the loop must not start'))

    assert entrypoints.agent_main() == 1
    err = capsys.readouterr().err
    assert 'TX9_AGENT_MOUNT_GIDS' in err and 'recreate' in err


def test_the_agent_entrypoint_starts_the_loop_with_the_mount_groups(monkeypatch, tmp_path):
    account = pwd.getpwuid(os.getuid())
    monkeypatch.setenv('TX9_AGENT_MOUNT_GIDS', '4271')
    monkeypatch.setenv('TX9_DATA_DIR', str(tmp_path))
    for variable in ('HOME', 'USER', 'LOGNAME'):  # the entrypoint sets them for the loop
        monkeypatch.setenv(variable, os.environ.get(variable, ''))
    (tmp_path / 'home' / 'agent').mkdir(parents=True)
    monkeypatch.setattr(entrypoints, 'agent_account', lambda: account)
    monkeypatch.setattr(entrypoints.cli, 'main', lambda argv: 0)
    started = []
    monkeypatch.setattr(entrypoints.os, 'execvp', lambda file, argv: started.append(argv))
    monkeypatch.chdir(tmp_path)

    entrypoints.agent_main()

    assert len(started) == 1
    option = started[0][3]
    assert option.startswith('--groups=') and '4271' in option[len('--groups='):].split(','), started[0]


def test_the_agent_entrypoint_stops_when_init_fails_so_the_restart_policy_retries(monkeypatch, capsys):
    monkeypatch.setattr(entrypoints.cli, 'main', lambda argv: 1 if argv == ['init', '--boot'] else 0)
    monkeypatch.setattr(entrypoints.os, 'execvp', lambda *args: pytest.fail('the loop must not start'))
    assert entrypoints.agent_main() == 1
    assert 'hb init failed' in capsys.readouterr().err


def test_executor_runs_on_loopback_with_no_credentials_on_its_command_line():
    argv = entrypoints.daemon_argv('/bin/executor', ['executor', 'box.example.com'])
    assert argv[argv.index('--hostname') + 1] == '127.0.0.1'
    assert argv[argv.index('--port') + 1] == str(entrypoints.DAEMON_PORT) != str(entrypoints.PORT)
    assert not [a for a in argv if a.startswith(('--auth-token', '--auth-password'))]
    assert argv.count('--allowed-host') == 2


class Running:
    """A daemon process that is still running."""

    @staticmethod
    def poll():
        return None


def test_executor_is_announced_as_up_once_its_loopback_port_accepts_a_connection(capsys):
    with socket.socket() as listener:
        listener.bind(('127.0.0.1', 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        assert entrypoints.announce_when_up(Running(), port, interval=0.01, give_up_after=5) is True
    assert 'Executor is up on port 4788 behind the token check' in capsys.readouterr().out


def test_executor_is_not_announced_when_the_daemon_exits_before_it_answers(capsys):
    class Exited:
        @staticmethod
        def poll():
            return 1
    assert entrypoints.announce_when_up(Exited(), 1, interval=0.01, give_up_after=5) is False
    assert 'is up' not in capsys.readouterr().out
