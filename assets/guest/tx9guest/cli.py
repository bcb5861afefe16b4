# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""hb's command line: usage, the command table, and how each failure becomes an exit code.

Exit codes: 0 success, 1 failure (one sentence on stderr: what is wrong and
what to run), 2 wrong arguments (usage on stderr). `hb is-paused` exits 1
when the box is not quiesced.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from .boxinit import cmd_init
from .context import Context
from .doctor import cmd_doctor, cmd_status
from .errors import HbError, UsageError
from .events import cmd_events
from .gateway import cmd_gateway_disable, cmd_gateway_enable
from .health import cmd_executor_health
from .logview import cmd_logs
from .quiesce import cmd_down, cmd_is_paused, cmd_up
from .restore import cmd_restore_promote
from .services import cmd_services, cmd_services_reload
from .state import cmd_verify_state, cmd_write_manifest
from .tools import cmd_versions
from .wiring import cmd_wire_mcp, cmd_wire_once
from .workload import cmd_workload

USAGE = """usage: hb COMMAND [ARGS]

commands:
  init [--boot]        create the box's managed directories (root or agent)
  versions [--json]    installed tool versions
  status [--json] [--health]
                       box summary; --json prints one JSON object last;
                       --health exits 1 unless the box is healthy (the health check)
  doctor [--json]      run all checks; exit 1 naming the failed ones
  down [--by WHO]      quiesce durably: stop services and the gateway until `up`
                       (alias: pause; WHO defaults to user)
  up [--if-by WHO]     resume: remove the quiesce marker, start services and
                       the gateway (alias: resume; with --if-by only when WHO
                       quiesced the box)
  is-paused            exit 0 when the box is quiesced, 1 when not
  gateway-enable --confirm-single-writer I_CONFIRM_NO_OTHER_GATEWAY_USES_THIS_IDENTITY
                       run the Hermes gateway (only one copy may ever run)
  gateway-disable      stop the Hermes gateway and keep it stopped
  services [--json]    custom services, their state and the ignored entries
  services-reload      reconcile the custom services now (retries given-up ones)
  verify-state [--checkpoint]
                       SQLite integrity of Hermes' state; --checkpoint first
                       folds the WAL into each database (for a consistent copy)
  write-manifest       write ~/.config/hermes-box/manifest.json
  executor-health      (Executor container) Docker's health check: exit 1 unless
                       Executor answers an authenticated MCP handshake
  wire-mcp             register Executor's MCP with Claude, Codex and Hermes
  wire-once            rewire only when the wiring is stale
  workload             run the reconcile loop (the container's main process)
  logs [NAME] [-n N] [-f] [--json]
                       show the durable log of NAME (agent, hermes,
                       service-NAME); without NAME, list the logs
  events [--source S]... [--since TIME] [--contains TEXT] [--level LEVEL] [--limit N]
                       the durable logs and the tools' histories (Codex,
                       Claude Code, Hermes) as JSON events, newest N
  restore-promote STAGE_DIR
                       (root, restore container) replace /data with a staged backup
"""
COMMANDS: dict[str, Callable[[Context, list[str]], int]] = {
    'init': cmd_init,
    'versions': cmd_versions,
    'status': cmd_status,
    'doctor': cmd_doctor,
    'down': cmd_down,
    'pause': cmd_down,
    'up': cmd_up,
    'resume': cmd_up,
    'is-paused': cmd_is_paused,
    'gateway-enable': cmd_gateway_enable,
    'gateway-disable': cmd_gateway_disable,
    'services': cmd_services,
    'services-reload': cmd_services_reload,
    'verify-state': cmd_verify_state,
    'write-manifest': cmd_write_manifest,
    'executor-health': cmd_executor_health,
    'wire-mcp': cmd_wire_mcp,
    'wire-once': cmd_wire_once,
    'workload': cmd_workload,
    'logs': cmd_logs,
    'events': cmd_events,
    'restore-promote': cmd_restore_promote,
}


def main(argv: list[str], ctx: Context | None = None) -> int:
    """Run `hb ARGV`; its exit code. ctx: the box to act on (default: this container's)."""
    if argv[:1] in (['-h'], ['--help'], ['help']):
        print(USAGE, end='')
        return 0
    command, args = (argv[0], argv[1:]) if argv else ('status', [])
    handler = COMMANDS.get(command)
    if handler is None:
        print(f"hb: unknown command '{command}'\n\n{USAGE}", end='', file=sys.stderr)
        return 2
    try:
        return handler(Context() if ctx is None else ctx, args)
    except UsageError as e:
        print(f'hb {e}\n\n{USAGE}', end='', file=sys.stderr)
        return 2
    except HbError as e:
        print(f'hb {command}: {e}', file=sys.stderr)
        return 1
    except OSError as e:
        where = f' ({e.filename})' if e.filename else ''
        print(
            f"hb {command}: {e.strerror or e}{where}; check the box's data volume and run `hb doctor`", file=sys.stderr
        )
        return 1
