# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Supervision: hb starts and stops the gateway and each custom service, each under its own log capture.

Every process hb runs runs under `tx9-logs capture`, which keeps a state
record in the runtime directory; hb finds those processes again through it,
even after the loop restarted or from another hb invocation.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from . import settings
from .errors import HbError
from .files import ensure_runtime, remove
from .mcp import TOKEN_ENV_NAME
from .pids import pid_alive, proc_cmdline, remember_child, signal_group, wait_gone
from .settings import AGENT_USER, Paths
from .statefile import read_state

if TYPE_CHECKING:
    from .context import Context

STOP_GRACE = 5.0
# A restart policy: the settings (and their defaults) of the first delay, its cap, the fast failures in a
# row before giving up, and how short a run must be to count as a fast failure.
Policy = tuple[tuple[str, float], tuple[str, float], tuple[str, int], tuple[str, float]]


def capture_alive(state: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    """True when the capture that wrote this state record still runs."""
    if not state or not pid_alive(state.get('pid'), state.get('pid_start')):
        return False
    return any(os.path.basename(part) == 'tx9-logs' for part in proc_cmdline(state['pid']))


def agent_env(ctx: Context) -> dict[str, str]:
    """The environment of a process hb runs for the agent (services, gateway)."""
    env = dict(os.environ)
    for name in ('TX9_LOGS_CAPTURED', 'HB_WORKLOAD_ONCE'):
        env.pop(name, None)
    home = ctx.paths.home
    env.update(
        HOME=home,
        USER=AGENT_USER,
        LOGNAME=AGENT_USER,
        SHELL='/bin/bash',
        CLAUDE_CONFIG_DIR=ctx.paths.claude_dir,
        CODEX_HOME=ctx.paths.codex_home,
        HERMES_HOME=ctx.paths.hermes_home,
    )
    for name, rel in (
        ('XDG_CONFIG_HOME', '.config'),
        ('XDG_DATA_HOME', '.local/share'),
        ('XDG_STATE_HOME', '.local/state'),
    ):
        env.setdefault(name, os.path.join(home, rel))
    parts = env.get('PATH', '/usr/local/bin:/usr/bin:/bin').split(os.pathsep)
    env['PATH'] = os.pathsep.join(
        [d for d in (os.path.join(home, '.local/bin'),) + Paths.tool_dirs if d not in parts] + parts
    )
    if ctx.token:
        # Codex (bearer_token_env_var) and Hermes (${...}) read the token from here.
        env[TOKEN_ENV_NAME] = ctx.token
    return env


def policy_args(ctx: Context, policy: Policy) -> list[str]:
    (delay_name, delay), (max_name, maximum), (give_name, give_up), (fast_name, fast) = policy
    return [
        '--restart-delay',
        f'{ctx.number(delay_name, delay):g}',
        '--restart-max-delay',
        f'{ctx.number(max_name, maximum):g}',
        '--give-up-after',
        str(ctx.number(give_name, give_up)),
        '--fast-seconds',
        f'{ctx.number(fast_name, fast):g}',
    ]


def policy_fingerprint(ctx: Context, policy: Policy) -> str:
    return ','.join(policy_args(ctx, policy)[1::2])


def capture_command(
    ctx: Context, source: str, state_path: str, argv: Sequence[str], fingerprint: str, policy: Policy
) -> list[str]:
    """`tx9-logs capture` with the box's log limits and the restart policy, running argv."""
    command = [
        sys.executable,
        ctx.paths.launcher('tx9-logs'),
        'capture',
        '--source',
        source,
        '--log-dir',
        ctx.paths.logs,
        '--box',
        ctx.box,
        '--state-file',
        state_path,
        '--fingerprint',
        fingerprint,
        '--no-mirror',
        '--stop-grace',
        f'{STOP_GRACE:g}',
    ]
    command += [
        '--max-bytes',
        str(ctx.number('TX9_LOG_MAX_BYTES', 20 * 1024 * 1024)),
        '--max-files',
        str(ctx.number('TX9_LOG_MAX_FILES', 5)),
    ]
    return command + policy_args(ctx, policy) + ['--'] + list(argv)


def spawn_capture(
    ctx: Context, source: str, state_path: str, argv: Sequence[str], fingerprint: str, policy: Policy
) -> int:
    """Start argv under `tx9-logs capture`, detached, as the agent; returns the capture's pid."""
    ensure_runtime(ctx.paths, os.path.dirname(state_path))
    remove(state_path)
    command = capture_command(ctx, source, state_path, argv, fingerprint, policy)
    options: dict[str, Any] = {
        'stdin': subprocess.DEVNULL,
        'stdout': subprocess.DEVNULL,
        'stderr': subprocess.DEVNULL,
        'start_new_session': True,
        'env': agent_env(ctx),
        'close_fds': True,
    }
    if os.path.isdir(ctx.paths.home):
        options['cwd'] = ctx.paths.home
    if os.geteuid() == 0:
        account = settings.agent_account()
        options.update(user=account.pw_uid, group=account.pw_gid, extra_groups=settings.agent_groups(account))
    try:
        proc = subprocess.Popen(command, **options)  # pylint: disable=consider-using-with
    except OSError as e:
        raise HbError(f'cannot start {source}: {e.strerror or e}; run `hb doctor`') from None
    remember_child(proc)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        state = read_state(state_path)
        if state and state.get('pid') == proc.pid:
            return proc.pid
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise HbError(
        f'{source} did not start (its log capture exited with status {proc.poll()}); '
        f'read `hb logs {source}` and run `hb doctor`'
    )


def stop_captures(records: list[tuple[str, str]], what: str, grace: float = STOP_GRACE) -> list[str]:
    """Stop several captured processes at once: TERM, then KILL; raises HbError if one survives.

    records: (label, state path) pairs. Every state file is removed once its
    process is gone.
    """
    running: list[tuple[str, str, dict[str, Any]]] = []
    for label, path in records:
        state = read_state(path)
        if capture_alive(state):
            with contextlib.suppress(ProcessLookupError):
                os.kill(state['pid'], signal.SIGTERM)
            running.append((label, path, state))
        else:
            # The capture died on its own; its child may live on, orphaned.
            child, start = (state or {}).get('child_pid'), (state or {}).get('child_start')
            if child and pid_alive(child, start):
                signal_group(child, signal.SIGKILL)
                if not wait_gone(lambda: pid_alive(child, start), 2.0):
                    raise HbError(
                        f'could not stop the orphaned process {child} of {label} ({what}); '
                        'look at `ps -ef` in the box, or restart the agent container'
                    )
            remove(path)
    survivors: list[str] = []
    for label, path, state in running:
        if not wait_gone(lambda: capture_alive(state), grace + 2.0):
            with contextlib.suppress(ProcessLookupError):
                os.kill(state['pid'], signal.SIGKILL)
        latest = read_state(path) or state
        child = latest.get('child_pid') or state.get('child_pid')
        start = latest.get('child_start') or state.get('child_start')
        if child and pid_alive(child, start):
            signal_group(child, signal.SIGKILL)
        gone = wait_gone(lambda: capture_alive(state) or (child and pid_alive(child, start)), 2.0)
        if gone:
            remove(path)
        else:
            survivors.append(label)
    if survivors:
        raise HbError(
            f'could not stop {", ".join(survivors)} ({what}); '
            'look at `ps -ef` in the box, or restart the agent container'
        )
    return [label for label, _path, _state in running]


def stop_capture(path: str, label: str, what: str, grace: float = STOP_GRACE) -> bool:
    return bool(stop_captures([(label, path)], what, grace))


def run_as_agent(ctx: Context, command: str, args: list[str]) -> int:
    """Run `hb COMMAND ARGS` as the agent (files it creates must stay the agent's); its exit status."""
    account = settings.agent_account()
    done = subprocess.run(
        [sys.executable, ctx.paths.launcher('hb'), command] + list(args),
        check=False,
        user=account.pw_uid,
        group=account.pw_gid,
        extra_groups=settings.agent_groups(account),
        env=dict(os.environ, HOME=account.pw_dir, USER=AGENT_USER, LOGNAME=AGENT_USER),
    )
    return done.returncode
