#!/usr/bin/python
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


from __future__ import annotations

DOCUMENTATION = r"""
---
module: tx9_logs
short_description: Query a tx9 box's logs and tool histories, or export its logs as a bundle
version_added: 0.1.0
description:
  - Merges a box's events from both of its volumes into one list, oldest first. The agent volume
    gives the durable tx9 logs (C(agent), C(hermes), C(service-<name>)) and the native histories
    of Codex and Claude Code (session JSONL) and Hermes (its SQLite history); the Executor volume
    gives the C(executor) log. Executor's volume is read in the Executor container, never through
    the agent.
  - The reading happens in the box (C(hb events)), in the container that owns each volume, or in a
    throwaway read-only container without network when that container is stopped.
  - The readers are tolerant and bounded. A line that is not a JSON object, a line over 1 MiB, a
    row that cannot be read, or a database that is locked or damaged is skipped and counted in
    RV(skipped_count), never an error. Only the last 64 MiB of a file and the newest 500 files of a
    source are read; RV(partial) says when that left something out. Messages are cut to 2000
    characters.
  - Messages pass the durable logs' redaction, and the box token is replaced by C([REDACTED]) in
    every returned event and in the export bundle.
  - With O(export_path), writes a tar.gz of both volumes' C(/data/logs) instead of querying.
author:
  - col_agents.tx9 contributors (@col-agents)
extends_documentation_fragment:
  - col_agents.tx9.connection
attributes:
  check_mode:
    support: full
    description: A query reads only; an export reports the path it would write and writes nothing.
  diff_mode:
    support: none
    description: Nothing to compare.
  idempotent:
    support: partial
    description: A query changes nothing. An export writes a new file and fails with C(DEST_EXISTS) when
      O(export_path) exists.
options:
  name:
    description:
      - The box.
    type: str
    required: true
  sources:
    description:
      - The sources to return, any of C(agent), C(executor), C(egress), C(hermes), C(codex), C(claude) and
        C(service-<name>). C(hermes) is the gateway's log and Hermes' message history. C(egress) is a
        confined box's egress proxy, one event per request with its C(decision) (C(allowed) or
        C(denied)), the C(rule) that decided, C(host), C(port), C(method), C(status) and C(client).
      - Omitted, every source.
    type: list
    elements: str
  since:
    description:
      - Only events at or after this time, as an age (C(30m), C(2h), C(1d); units C(s), C(m), C(h),
        C(d), C(w)) or an ISO 8601 time (C(2026-07-04T12:00:00Z); without an offset it is UTC).
    type: str
  contains:
    description:
      - Only events whose message contains this text, ignoring case.
    type: str
  level:
    description:
      - Only events of this level and above. An event without a level counts as C(info).
    type: str
    choices: [debug, info, warning, error, critical]
  limit:
    description:
      - Return the newest N events that match, from 1 to 5000.
    type: int
    default: 200
  export_path:
    description:
      - Write a bundle (tar.gz, mode C(0600)) of both volumes' durable logs to this path on the
        target host instead of querying. The query options are ignored.
      - The bundle holds C(tx9-<name>-logs/agent/*.jsonl*), C(tx9-<name>-logs/executor/*.jsonl*)
        and C(tx9-<name>-logs/manifest.json) (every file's size and SHA-256, and what was left
        out). An existing path is never overwritten; the module fails with C(DEST_EXISTS).
    type: path
"""

EXAMPLES = r"""
- name: Errors of the last two hours, from every source
  col_agents.tx9.tx9_logs:
    name: dev
    since: 2h
    level: error
  register: errors

- name: What a custom service and Executor said about a deploy
  col_agents.tx9.tx9_logs:
    name: dev
    sources: [service-web, executor]
    contains: deploy
    limit: 50

- name: Export both volumes' logs for a bug report
  col_agents.tx9.tx9_logs:
    name: dev
    export_path: /var/tmp/dev-logs.tar.gz
  register: bundle
"""

RETURN = r"""
events:
  description:
    - The newest O(limit) matching events, oldest first. Each has C(time) (UTC, milliseconds, C(Z)),
      C(source), C(level), C(message) and C(origin) (C(tx9-log), C(codex-session),
      C(claude-session) or C(hermes-history)), plus what its origin knows (C(stream), C(type), C(data)
      for tx9 logs; C(kind), C(role), C(session), C(model), C(file) for histories) and
      C(truncated) when the message was cut.
  returned: when O(export_path) is not set
  type: list
  elements: dict
  sample: [{"time": "2026-07-04T12:00:00.123Z", "source": "service-web", "level": "info",
            "message": "listening", "origin": "tx9-log", "stream": "stdout", "type": "output"}]
skipped_count:
  description:
    - Lines and rows that could not be read (not a JSON object, over 1 MiB, an unreadable row, a locked
      or damaged database counted once).
    - Not called C(skipped), which Ansible reads as the task having been skipped.
  returned: when O(export_path) is not set
  type: int
  sample: 0
partial:
  description: What was read only in part, and why (files read only to their last 64 MiB, sources
    with too many files, missing containers).
  returned: when O(export_path) is not set
  type: list
  elements: str
  sample: []
export:
  description: The bundle written (in check mode, the path it would have; C(size) and C(files) null).
  returned: when O(export_path) is set
  type: dict
  contains:
    path:
      description: The bundle's absolute path.
      type: str
      sample: /var/tmp/dev-logs.tar.gz
    size:
      description: Its size in bytes.
      type: int
      sample: 18432
    files:
      description: How many log files it holds.
      type: int
      sample: 3
    left_out:
      description: Files of the log directories left out, with the reason.
      type: list
      elements: dict
      sample: []
"""

from typing import Any

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._module import docker_client, new_module, run
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.logbundle import export_logs
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.logs import LogQuery, box_secret, existing_box


def logs(module: AnsibleModule) -> dict[str, Any]:
    client = docker_client(module)
    home = StateHome(module.params['state_home'])
    if module.params['export_path']:
        objects = existing_box(client, module.params['name'])
        secret = box_secret(home, objects)
        if secret:
            module.no_log_values.add(secret)
        return export_logs(client, objects, secret, module.params['export_path'], module.check_mode)
    return LogQuery(client, home, module.params, hide=module.no_log_values.add).run()


def main() -> None:
    module = new_module(
        dict(
            name=dict(type='str', required=True),
            sources=dict(type='list', elements='str'),
            since=dict(type='str'),
            contains=dict(type='str'),
            level=dict(type='str', choices=['debug', 'info', 'warning', 'error', 'critical']),
            limit=dict(type='int', default=200),
            export_path=dict(type='path'),
            state_home=dict(type='path'),
        ),
        supports_check_mode=True,
    )
    run(module, lambda: logs(module))


if __name__ == '__main__':
    main()
