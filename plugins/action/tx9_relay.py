# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stream a file from another host to this one through the controller, nothing of it on the controller's disk."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ansible import constants as C
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.col_agents.tx9.plugins.plugin_utils._relay import (
    RelayError,
    connection_kind,
    reader_command,
    remote_argv,
    ssh_argv,
    stream,
    writer_command,
)

# The connection variables the relay reads (each host's own, as its inventory gives them).
CONNECTION_VARS = (
    'ansible_connection',
    'ansible_host',
    'ansible_ssh_host',
    'ansible_user',
    'ansible_ssh_user',
    'ansible_port',
    'ansible_ssh_port',
    'ansible_ssh_private_key_file',
    'ansible_private_key_file',
    'ansible_ssh_common_args',
    'ansible_ssh_args',
    'ansible_ssh_extra_args',
    'ansible_ssh_pass',
    'ansible_password',
    'ansible_ssh_password',
    'ansible_host_key_checking',
    'ansible_ssh_host_key_checking',
    'ansible_python_interpreter',
)


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(('src', 'src_host', 'dest_dir', 'size', 'sha256', 'timeout'))

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        missing = [name for name in ('src', 'src_host', 'dest_dir', 'size') if args.get(name) in (None, '')]
        if missing:
            result.update(
                failed=True,
                cause='INVALID_ARGUMENT',
                msg=f'tx9_relay needs {", ".join(missing)}.',
                fix='Give src, src_host, dest_dir and size.',
            )
            return result
        src, source, dest = str(args['src']), str(args['src_host']), str(task_vars.get('inventory_hostname'))
        try:
            size, idle = int(args['size']), float(args.get('timeout', 300))
        except (TypeError, ValueError):
            result.update(
                failed=True,
                cause='INVALID_ARGUMENT',
                msg='tx9_relay size and timeout must be numbers.',
                fix='Give size in bytes and timeout in seconds.',
            )
            return result
        if self._play_context.check_mode:
            path = os.path.join(str(args['dest_dir']), os.path.basename(src))
            result.update(changed=True, path=path, size=size, msg='Check mode: nothing was relayed.')
            return result
        try:
            source_vars = self._host_vars(task_vars.get('hostvars', {}).get(source, {}))
            dest_vars = self._host_vars(task_vars)
            reader = self._argv(source, source_vars, reader_command(src))
            python = str(
                dest_vars.get('ansible_python_interpreter')
                or task_vars.get('ansible_facts', {}).get('discovered_interpreter_python')
                or 'python3'
            )
            writer = self._argv(
                dest,
                dest_vars,
                writer_command(
                    python, str(args['dest_dir']), os.path.basename(src), size, str(args.get('sha256') or '')
                ),
            )
            arrived = stream(reader, writer, source, dest, idle)
        except RelayError as exc:
            result.update(
                failed=True,
                cause='RELAY_FAILED',
                step=exc.step,
                fix=exc.fix,
                msg=f'Relaying {src} from {source} to {dest} failed at {exc.step}: {exc.reason}',
            )
            return result
        result.update(changed=True, path=arrived['path'], size=arrived['size'], sha256=arrived['sha256'])
        return result

    def _host_vars(self, hostvars: Mapping[str, Any]) -> dict[str, Any]:
        """A host's connection variables, templated."""
        found: dict[str, Any] = {}
        for name in CONNECTION_VARS:
            if name in hostvars and hostvars[name] is not None:
                found[name] = self._templar.template(hostvars[name])
        return found

    def _argv(self, host: str, hostvars: Mapping[str, Any], command: list[str]) -> list[str]:
        """argv that runs command on host, with the task's become (sudo only)."""
        kind = connection_kind(host, hostvars)
        become_user = None
        if self._play_context.become:
            if self._play_context.become_method != 'sudo':
                raise RelayError(
                    'connect',
                    f'The task becomes by {self._play_context.become_method}; the relay becomes by sudo only.',
                    'Use become_method sudo, or no become, for the move.',
                )
            become_user = self._play_context.become_user or 'root'
        base: list[str] = []
        if kind == 'ssh':
            checking = hostvars.get('ansible_ssh_host_key_checking', hostvars.get('ansible_host_key_checking'))
            if checking is None:
                checking = C.config.get_config_value('HOST_KEY_CHECKING')
            base = ssh_argv(host, hostvars, boolean(checking, strict=False))
        return remote_argv(kind, base, command, become_user)
