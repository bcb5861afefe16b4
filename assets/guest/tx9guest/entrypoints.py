# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containers' entrypoints: the agent's (init, then the workload loop) and the Executor's.

The agent entrypoint runs as root under docker-init. It prepares the box's
home with `hb init --boot` (which also forgets the previous run's PIDs and
locks), then becomes the agent user and runs the workload loop under
`tx9-logs capture`: the loop's output is kept, redacted, in
/data/logs/agent.jsonl and mirrored to the container's log, and the loop is
restarted 2 s after it dies. The loop holds the agent's own groups and, when
the box has host mounts of other groups, theirs (TX9_AGENT_MOUNT_GIDS, the
list tx9 also gives docker exec sessions through group_add); an invalid list
stops the entrypoint with a message. setpriv execs in place, so the capture is the
container's main process; docker's TERM reaches it, it stops the loop (which
stops the services and the gateway) and exits 143.

The Executor entrypoint runs Executor's MCP gateway for one tx9 box. It starts
as root under docker-init, prepares /data for the agent user, stores the token
in Executor's data directory (file 0600, directory 0700), then runs `executor
daemon run` as the agent behind the token-checking front and supervises it.

Keeping the token out of every command line: Executor runs on loopback
inside its container (127.0.0.1:4789) with its own auth off, so it is never
given the token. The published port 4788 belongs to a small front in the
entrypoint's own process (tx9guest.authfront) that reads the token from
server-control/auth.json (0600, the agent's) and passes a request on only
when it carries the token as a Bearer header, as an HTTP Basic password, or as
`?_token=`. Docker passes the token as the EXECUTOR_MCP_TOKEN environment
variable (readable only by the container's root), the entrypoint takes no
arguments, and the daemon's environment does not carry it.

The container's health check is `hb executor-health` (tx9guest.health): an
authenticated MCP handshake through the front, with the token read from that
same file.

Durable logs: the Executor entrypoint first re-runs itself under `tx9-logs
capture --source executor`, so everything it and the daemon print is kept,
redacted (the token included), in /data/logs/executor.jsonl on the Executor's
own volume (never mounted into the agent) and mirrored to the container's log.

Environment of the Executor entrypoint:
  EXECUTOR_MCP_TOKEN            required; the Bearer token clients must send
  TX9_BOX_NAME                  the box name, for log lines
  TX9_EXECUTOR_ALLOWED_HOSTS    comma-separated extra Host header names
  EXECUTOR_WEB_BASE_URL         optional public URL; its host is allowed too
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Mapping
from types import FrameType
from typing import NoReturn

from . import authfront, cli
from .errors import HbError
from .files import write_atomic
from .health import executor_token_file
from .settings import AGENT_USER, Paths, agent_account, agent_groups, load_settings, mount_gids

PORT = 4788
DAEMON_PORT = 4789
NAME = 'tx9-executor-entrypoint'
HOST_RE = re.compile(r'^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.\-]*[A-Za-z0-9])?)$')


def agent_main() -> int:
    """The agent container's entrypoint: `hb init --boot`, then the loop as the agent under its log capture."""
    paths = Paths(load_settings())
    try:
        groups = loop_groups(os.environ)
    except HbError as e:
        print(f'tx9-agent-entrypoint: {e}', file=sys.stderr, flush=True)
        return 1
    if cli.main(['init', '--boot']) != 0:
        print(
            'tx9-agent-entrypoint: hb init failed (see above); exiting so the restart policy retries',
            file=sys.stderr,
            flush=True,
        )
        return 1
    os.environ.update(HOME=paths.home, USER=AGENT_USER, LOGNAME=AGENT_USER)
    try:
        os.chdir(paths.home)
    except OSError as e:
        print(f'tx9-agent-entrypoint: cannot enter {paths.home}: {e.strerror or e}', file=sys.stderr, flush=True)
        return 1
    sys.stdout.flush()
    os.execvp('setpriv', agent_loop_argv(paths, groups))


def loop_groups(environ: Mapping[str, str]) -> list[int] | None:
    """The agent's groups for its loop when the box has host mounts of other groups; None: its own (--init-groups)."""
    if not mount_gids(environ):
        return None
    return agent_groups(agent_account(), environ)


def agent_loop_argv(paths: Paths, groups: list[int] | None = None) -> list[str]:
    """setpriv, as the agent, running the workload loop under its log capture.

    groups: the supplementary groups to hold (its own and its host mounts'); None for its own only.
    """
    group_option = '--init-groups' if groups is None else '--groups=' + ','.join(str(gid) for gid in groups)
    return [
        'setpriv',
        f'--reuid={AGENT_USER}',
        f'--regid={AGENT_USER}',
        group_option,
        '--',
        os.path.join(paths.bin_dir, 'tx9-logs'),
        'capture',
        '--source',
        'agent',
        '--log-dir',
        paths.logs,
        '--restart-delay',
        '2',
        '--restart-max-delay',
        '30',
        '--give-up-after',
        '0',
        '--stop-grace',
        '9',
        '--',
        os.path.join(paths.bin_dir, 'hb'),
        'workload',
    ]


def say(message: str) -> None:
    print(f'{NAME}: {message}', flush=True)


def die(message: str) -> NoReturn:
    print(f'{NAME}: {message}', file=sys.stderr, flush=True)
    sys.exit(1)


def read_token() -> str:
    token = os.environ.get('EXECUTOR_MCP_TOKEN', '').strip()
    if not token:
        die(
            'EXECUTOR_MCP_TOKEN is not set, and Executor must not run without a '
            "token; recreate the box's executor container with tx9 so it gets one"
        )
    if not re.fullmatch(r'[\x21-\x7e]+', token):
        die(
            'EXECUTOR_MCP_TOKEN contains spaces or control characters; '
            "recreate the box's executor container with a fresh token"
        )
    return token


def bracket(host: str) -> str:
    # Executor compares the Host header without its port, so an IPv6
    # address must be allowed in its bracketed form.
    return f'[{host}]' if ':' in host and not host.startswith('[') else host


def allowed_hosts(environ: Mapping[str, str]) -> list[str]:
    """Host header names Executor accepts besides localhost/127.0.0.1."""
    hosts = ['executor']
    for raw in environ.get('TX9_EXECUTOR_ALLOWED_HOSTS', '').split(','):
        host = raw.strip()
        if not host:
            continue
        if not HOST_RE.match(host):
            die(
                f'TX9_EXECUTOR_ALLOWED_HOSTS has an invalid host name {host!r}; '
                "fix the box's executor settings and recreate the container"
            )
        hosts.append(host)
    base_url = environ.get('EXECUTOR_WEB_BASE_URL', '').strip()
    if base_url:
        base_host = urllib.parse.urlsplit(base_url).hostname
        if not base_host:
            die(
                f'EXECUTOR_WEB_BASE_URL {base_url!r} has no host name; '
                'set it to an absolute URL such as https://box.example.com'
            )
        hosts.append(bracket(base_host))
    unique: list[str] = []
    for host in hosts:
        if host.lower() not in (h.lower() for h in unique):
            unique.append(host)
    return unique


def executor_binary() -> str:
    """The native Executor binary, skipping the npm launcher.

    The launcher is a node process that would carry the token in its argv
    as well, and it adds a process between this supervisor and the daemon.
    """
    override = os.environ.get('EXECUTOR_BIN_PATH')
    if override:
        return override
    launcher = shutil.which('executor')
    if launcher is None:
        die('the executor command is not installed in this image; rebuild the box image')
    package = os.path.dirname(os.path.dirname(os.path.realpath(launcher)))
    arch = {'x86_64': 'x64', 'aarch64': 'arm64', 'arm64': 'arm64'}.get(platform.machine(), platform.machine())
    for name in (f'executor-linux-{arch}', f'executor-linux-{arch}-musl'):
        candidate = os.path.join(package, 'node_modules', name, 'bin', 'executor')
        if os.access(candidate, os.X_OK):
            return candidate
    return launcher


def prepare_data(paths: Paths, agent: pwd.struct_passwd) -> None:
    """Home and Executor data directory on the data volume, owned by the agent."""
    os.makedirs(os.path.dirname(paths.home), mode=0o755, exist_ok=True)
    control = os.path.join(paths.executor_data, 'server-control')
    for path, mode in ((paths.home, 0o755), (paths.executor_data, 0o700), (control, 0o700)):
        os.makedirs(path, mode=mode, exist_ok=True)
        os.chown(path, agent.pw_uid, agent.pw_gid)
        os.chmod(path, mode)


def clear_stale_records(data_dir: str) -> None:
    """Remove the previous run's daemon records.

    Nothing else runs in this container at start, but PIDs repeat across
    container restarts, and Executor refuses to start when a leftover record
    names a live PID it cannot reach.
    """
    control = os.path.join(data_dir, 'server-control')
    stale = [os.path.join(control, 'server.json'), os.path.join(control, 'startup.lock')]
    stale += [
        os.path.join(data_dir, f) for f in os.listdir(data_dir) if f.startswith('daemon-') and f.endswith('.json')
    ]
    for path in stale:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(path)


def write_token_file(data_dir: str, token: str) -> None:
    """server-control/auth.json, 0600, written in one rename."""
    write_atomic(os.path.join(data_dir, 'server-control', 'auth.json'), json.dumps({'token': token}), 0o600)


def drop_to(agent: pwd.struct_passwd) -> None:
    os.setgroups(os.getgrouplist(agent.pw_name, agent.pw_gid))
    os.setgid(agent.pw_gid)
    os.setuid(agent.pw_uid)


def child_env(agent: pwd.struct_passwd, data_dir: str) -> dict[str, str]:
    env = dict(os.environ)
    # Neither the daemon nor the tools it runs have any business seeing the token.
    env.pop('EXECUTOR_MCP_TOKEN', None)
    env.update(HOME=agent.pw_dir, USER=agent.pw_name, LOGNAME=agent.pw_name, EXECUTOR_DATA_DIR=data_dir)
    return env


def supervise(argv: list[str], env: dict[str, str], cwd: str, front: authfront.Front) -> int:
    """Run the daemon until it exits; its exit status (128+signal after a forwarded stop)."""
    os.umask(0o077)  # Executor's records stay private to the agent
    proc = subprocess.Popen(argv, env=env, cwd=cwd)
    stopped_by = []

    def forward(signum: int, frame: FrameType | None) -> None:
        stopped_by.append(signum)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    threading.Thread(target=announce_when_up, args=(proc, DAEMON_PORT), daemon=True).start()
    code = proc.wait()
    front.close()
    # Report a forwarded stop signal as 128+signal whatever code Executor
    # chose for it, so `docker stop` always ends this container with 143.
    if stopped_by and code != 0:
        return 128 + stopped_by[0]
    return 128 - code if code < 0 else code


def announce_when_up(
    proc: subprocess.Popen[bytes], port: int, interval: float = 0.5, give_up_after: float = 900
) -> bool:
    """Say once that Executor is up, when its loopback port first accepts a connection."""
    deadline = time.monotonic() + give_up_after
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            socket.create_connection(('127.0.0.1', port), timeout=2).close()
        except OSError:
            time.sleep(interval)
            continue
        say(f'Executor is up on port {PORT} behind the token check')
        return True
    return False


def daemon_argv(binary: str, hosts: list[str]) -> list[str]:
    """Executor on loopback with its own auth off: the front checks the token."""
    argv = [binary, 'daemon', 'run', '--foreground', '--hostname', '127.0.0.1', '--port', str(DAEMON_PORT)]
    for host in hosts:
        argv += ['--allowed-host', host]
    return argv


def capture_argv(
    script: str, paths: Paths, capture: str | None = None, environ: Mapping[str, str] | None = None
) -> list[str] | None:
    """The argv that re-runs the entrypoint script under the log capture, or None when it already runs under it."""
    capture = os.path.join(paths.bin_dir, 'tx9-logs') if capture is None else capture
    environ = os.environ if environ is None else environ
    if environ.get('TX9_LOGS_CAPTURED') == '1' or not os.access(capture, os.X_OK):
        return None
    return [capture, 'capture', '--source', 'executor', '--log-dir', paths.logs, '--stop-grace', '8', '--', script]


def executor_main() -> int:
    """The Executor container's entrypoint; its exit status."""
    paths = Paths(load_settings())
    argv = capture_argv(os.path.realpath(sys.argv[0]), paths)
    if argv is not None:
        os.environ['TX9_LOGS_CAPTURED'] = '1'
        sys.stdout.flush()
        os.execv(argv[0], argv)
    token = read_token()
    try:
        agent = pwd.getpwnam(AGENT_USER)
    except KeyError:
        die(f"the '{AGENT_USER}' user is missing from this image; rebuild the box image")
    hosts = allowed_hosts(os.environ)
    binary = executor_binary()
    if os.geteuid() == 0:
        prepare_data(paths, agent)
        drop_to(agent)
    home, data_dir = paths.home, paths.executor_data
    clear_stale_records(data_dir)
    write_token_file(data_dir, token)
    front = authfront.Front(('0.0.0.0', PORT), ('127.0.0.1', DAEMON_PORT), executor_token_file(paths)).start()
    box = os.environ.get('TX9_BOX_NAME', '?')
    say(
        f'box {box}: Executor on 127.0.0.1:{DAEMON_PORT} behind the token check on 0.0.0.0:{PORT}, '
        f'allowed hosts {", ".join(hosts)}'
    )
    return supervise(daemon_argv(binary, hosts), child_env(agent, data_dir), home, front)
