# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The argument spec of the box options. Private to the col_agents.tx9 collection.

Pure data, so that the controller's plugins (the box_options lookup) read it without loading the
engine's client.
"""

from __future__ import annotations

from typing import Any

# The options of modules that create or recreate a box (doc fragment box_options).
BOX_OPTIONS: dict[str, dict[str, Any]] = dict(
    image=dict(type='str'),
    executor_web_base_url=dict(type='str'),
    executor_publish=dict(type='str'),
    executor_dns=dict(type='list', elements='str'),
    executor_allowed_hosts=dict(type='list', elements='str'),
    clear_executor_config=dict(type='bool', default=False),
    # Limits and budgets are read by _box/limits.py, which refuses a malformed one with INVALID_RESOURCES,
    # its value and the fix (Ansible's own conversion would only say the type is wrong).
    agent_cpus=dict(type='raw'),
    agent_memory=dict(type='raw'),
    executor_cpus=dict(type='raw'),
    executor_memory=dict(type='raw'),
    agent_volume_budget=dict(type='raw'),
    executor_volume_budget=dict(type='raw'),
    egress=dict(type='raw'),
    wait_timeout=dict(type='int', default=180),
)
