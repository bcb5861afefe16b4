# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run tx9_info; hide the result from output and logs when it carries box tokens."""

from __future__ import annotations

from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = super().run(tmp, task_vars)
        result.update(
            self._execute_module(
                module_name='col_agents.tx9.tx9_info', module_args=self._task.args, task_vars=task_vars
            )
        )
        if boolean(self._task.args.get('auth_url', False), strict=False):
            # The authenticated URL holds the token: censor the result as no_log would.
            result['_ansible_no_log'] = True
        return result
