# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containers' entrypoints: the agent's (init, then the workload loop) and the Executor's.

The agent entrypoint runs as root under docker-init. It prepares the box's
home with `hb init --boot` (which also forgets the previous run's PIDs and
locks), then becomes the agent user and runs the workload loop under
`tx9-logs capture`: the loop's output is kept, redacted, in
/data/logs/agent.jsonl and mirrored to the container's log, and the loop is
restarted 2 s after it dies. setpriv execs in place, so the capture is the
container's main process; docker's TERM reaches it, it stops the loop (which
stops the services and the gateway) and exits 143.

The Executor entrypoint runs Executor's MCP gateway for one tx9 box. It starts
as root under docker-init, prepares /data for the agent user, stores the token
in Executor's data directory (file 0600, directory 0700), then runs `executor
daemon run` as the agent and supervises it.

Keeping the token out of argv: Executor 1.5.9's daemon takes its server token
only from the --auth-token flag (its EXECUTOR_AUTH_TOKEN / EXECUTOR_API_KEY
variables configure the client side, not the daemon). So the daemon is given
the token in argv, and as soon as it answers HTTP (its flags are parsed by
then) this supervisor overwrites the token in the daemon's own argv memory
through /proc/PID/mem. From then on /proc/PID/cmdline and ps show asterisks.
The kernel allows that write to a process of the same user without extra
capabilities, which is why the supervisor drops to the agent before spawning.
The container's command line never carries the token: Docker passes it as the
EXECUTOR_MCP_TOKEN environment variable, and the entrypoint takes no arguments.

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
import contextlib
import json
import os
import platform
import pwd
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from . import cli
from .files import write_atomic
from .pids import read_proc_stat
from .settings import AGENT_USER, Paths, load_settings

PORT = 4788
READY_TIMEOUT = 180.0
RESCAN_INTERVAL = 10.0
NAME = "tx9-executor-entrypoint"
HOST_RE = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.\-]*[A-Za-z0-9])?)$")


def agent_main():
    """The agent container's entrypoint: `hb init --boot`, then the loop as the agent under its log capture."""
    paths = Paths(load_settings())
    if cli.main(["init", "--boot"]) != 0:
        print("tx9-agent-entrypoint: hb init failed (see above); exiting so the restart policy retries",
              file=sys.stderr, flush=True)
        return 1
    os.environ.update(HOME=paths.home, USER=AGENT_USER, LOGNAME=AGENT_USER)
    try:
        os.chdir(paths.home)
    except OSError as e:
        print(f"tx9-agent-entrypoint: cannot enter {paths.home}: {e.strerror or e}", file=sys.stderr, flush=True)
        return 1
    sys.stdout.flush()
    os.execvp("setpriv", agent_loop_argv(paths))
    return 1


def agent_loop_argv(paths):
    """setpriv, as the agent, running the workload loop under its log capture."""
    return ["setpriv", f"--reuid={AGENT_USER}", f"--regid={AGENT_USER}", "--init-groups", "--",
            os.path.join(paths.bin_dir, "tx9-logs"), "capture", "--source", "agent", "--log-dir", paths.logs,
            "--restart-delay", "2", "--restart-max-delay", "30", "--give-up-after", "0", "--stop-grace", "9",
            "--", os.path.join(paths.bin_dir, "hb"), "workload"]


def say(message):
    print(f"{NAME}: {message}", flush=True)


def die(message):
    print(f"{NAME}: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def read_token():
    token = os.environ.get("EXECUTOR_MCP_TOKEN", "").strip()
    if not token:
        die("EXECUTOR_MCP_TOKEN is not set, and Executor must not run without a "
            "token; recreate the box's executor container with tx9 so it gets one")
    if not re.fullmatch(r"[\x21-\x7e]+", token):
        die("EXECUTOR_MCP_TOKEN contains spaces or control characters; "
            "recreate the box's executor container with a fresh token")
    return token


def bracket(host):
    # Executor compares the Host header without its port, so an IPv6
    # address must be allowed in its bracketed form.
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(environ):
    """Host header names Executor accepts besides localhost/127.0.0.1."""
    hosts = ["executor"]
    for raw in environ.get("TX9_EXECUTOR_ALLOWED_HOSTS", "").split(","):
        host = raw.strip()
        if not host:
            continue
        if not HOST_RE.match(host):
            die(f"TX9_EXECUTOR_ALLOWED_HOSTS has an invalid host name {host!r}; "
                "fix the box's executor settings and recreate the container")
        hosts.append(host)
    base_url = environ.get("EXECUTOR_WEB_BASE_URL", "").strip()
    if base_url:
        host = urllib.parse.urlsplit(base_url).hostname
        if not host:
            die(f"EXECUTOR_WEB_BASE_URL {base_url!r} has no host name; "
                "set it to an absolute URL such as https://box.example.com")
        hosts.append(bracket(host))
    unique = []
    for host in hosts:
        if host.lower() not in (h.lower() for h in unique):
            unique.append(host)
    return unique


def executor_binary():
    """The native Executor binary, skipping the npm launcher.

    The launcher is a node process that would carry the token in its argv
    as well, and it adds a process between this supervisor and the daemon.
    """
    override = os.environ.get("EXECUTOR_BIN_PATH")
    if override:
        return override
    launcher = shutil.which("executor")
    if launcher is None:
        die("the executor command is not installed in this image; rebuild the box image")
    package = os.path.dirname(os.path.dirname(os.path.realpath(launcher)))
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), platform.machine())
    for name in (f"executor-linux-{arch}", f"executor-linux-{arch}-musl"):
        candidate = os.path.join(package, "node_modules", name, "bin", "executor")
        if os.access(candidate, os.X_OK):
            return candidate
    return launcher


def prepare_data(paths, agent):
    """Home and Executor data directory on the data volume, owned by the agent."""
    os.makedirs(os.path.dirname(paths.home), mode=0o755, exist_ok=True)
    control = os.path.join(paths.executor_data, "server-control")
    for path, mode in ((paths.home, 0o755), (paths.executor_data, 0o700), (control, 0o700)):
        os.makedirs(path, mode=mode, exist_ok=True)
        os.chown(path, agent.pw_uid, agent.pw_gid)
        os.chmod(path, mode)


def clear_stale_records(data_dir):
    """Remove the previous run's daemon records.

    Nothing else runs in this container at start, but PIDs repeat across
    container restarts, and Executor refuses to start when a leftover record
    names a live PID it cannot reach.
    """
    control = os.path.join(data_dir, "server-control")
    stale = [os.path.join(control, "server.json"), os.path.join(control, "startup.lock")]
    stale += [os.path.join(data_dir, f) for f in os.listdir(data_dir)
              if f.startswith("daemon-") and f.endswith(".json")]
    for path in stale:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            os.unlink(path)


def write_token_file(data_dir, token):
    """server-control/auth.json, 0600, written in one rename."""
    write_atomic(os.path.join(data_dir, "server-control", "auth.json"), json.dumps({"token": token}), 0o600)


def drop_to(agent):
    os.setgroups(os.getgrouplist(agent.pw_name, agent.pw_gid))
    os.setgid(agent.pw_gid)
    os.setuid(agent.pw_uid)


def child_env(agent, data_dir):
    env = dict(os.environ)
    # The daemon gets its token from argv (scrubbed below); tools it runs
    # have no business seeing it.
    env.pop("EXECUTOR_MCP_TOKEN", None)
    env.update(HOME=agent.pw_dir, USER=agent.pw_name, LOGNAME=agent.pw_name,
               EXECUTOR_DATA_DIR=data_dir)
    return env


def argv_region(pid):
    """(start, end) of a process's argv in its memory, from /proc/PID/stat."""
    fields = read_proc_stat(pid)
    # Fields 48 and 49 (arg_start, arg_end); the list starts at field 3.
    return int(fields[45]), int(fields[46])


def scrub_argv(pid, secret):
    """Overwrite secret in pid's argv with asterisks; True when it is gone."""
    needle = secret.encode()
    start, end = argv_region(pid)
    if end <= start:
        return False
    with open(f"/proc/{pid}/mem", "r+b", buffering=0) as mem:
        mem.seek(start)
        region = mem.read(end - start)
        at = region.find(needle)
        while at >= 0:
            mem.seek(start + at)
            mem.write(b"*" * len(needle))
            at = region.find(needle, at + len(needle))
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return needle not in f.read()


def own_processes_showing(secret):
    needle = secret.encode()
    uid = os.getuid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if needle in f.read():
                    yield int(entry)
        except OSError:
            continue


def scrub_all(secret):
    """Scrub every process of ours that shows the token; False if one resisted."""
    clean = True
    for pid in own_processes_showing(secret):
        try:
            ok = scrub_argv(pid, secret)
        except OSError as e:
            ok = False
            say(f"could not hide the token in pid {pid}'s command line: {e}")
        clean = clean and ok
    return clean


def answers_http(port):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/health")
    try:
        with urllib.request.urlopen(request, timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # 401 without a token: the daemon is up
    except OSError:
        return False


def guard_token(proc, token):
    """Wait until the daemon has parsed its flags, then keep argv clean."""
    deadline = time.monotonic() + READY_TIMEOUT
    while proc.poll() is None and not answers_http(PORT):
        if time.monotonic() > deadline:
            say(f"Executor did not answer on port {PORT} within {READY_TIMEOUT:g}s")
            break
        time.sleep(0.1)
    if proc.poll() is not None:
        return
    if scrub_all(token):
        say(f"Executor is up on port {PORT}; the token is hidden from its command line")
    else:
        say("WARNING: the token is still visible in a command line")
    # Executor may start helper processes later; they inherit nothing from
    # argv, but check from time to time all the same.
    while proc.poll() is None:
        time.sleep(RESCAN_INTERVAL)
        scrub_all(token)


def supervise(argv, token, env, cwd):
    os.umask(0o077)  # Executor writes the token into its server records
    # The same token as bearer token (MCP clients) and as Basic password, which is
    # how a browser opening the dashboard authenticates.
    proc = subprocess.Popen(argv + [f"--auth-token={token}", f"--auth-password={token}"], env=env, cwd=cwd)

    stopped_by = []

    def forward(signum, frame):
        stopped_by.append(signum)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    threading.Thread(target=guard_token, args=(proc, token), daemon=True).start()
    code = proc.wait()
    # Report a forwarded stop signal as 128+signal whatever code Executor
    # chose for it, so `docker stop` always ends this container with 143.
    if stopped_by and code != 0:
        return 128 + stopped_by[0]
    return 128 - code if code < 0 else code


def capture_argv(script, paths, capture=None, environ=None):
    """The argv that re-runs the entrypoint script under the log capture, or None when it already runs under it."""
    capture = os.path.join(paths.bin_dir, "tx9-logs") if capture is None else capture
    environ = os.environ if environ is None else environ
    if environ.get("TX9_LOGS_CAPTURED") == "1" or not os.access(capture, os.X_OK):
        return None
    return [capture, "capture", "--source", "executor", "--log-dir", paths.logs, "--stop-grace", "8", "--", script]


def executor_main():
    """The Executor container's entrypoint; its exit status."""
    paths = Paths(load_settings())
    argv = capture_argv(os.path.realpath(sys.argv[0]), paths)
    if argv is not None:
        os.environ["TX9_LOGS_CAPTURED"] = "1"
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
    argv = [binary, "daemon", "run", "--foreground", "--hostname", "0.0.0.0", "--port", str(PORT)]
    for host in hosts:
        argv += ["--allowed-host", host]
    box = os.environ.get("TX9_BOX_NAME", "?")
    say(f"box {box}: starting Executor on 0.0.0.0:{PORT}, allowed hosts {', '.join(hosts)}")
    return supervise(argv, token, child_env(agent, data_dir), home)
