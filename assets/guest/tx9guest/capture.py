# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9-logs: durable, redacted logs for every tx9-owned process in a box.

tx9-logs capture --source NAME [options] -- ARGV...
    Runs ARGV (never through a shell) in its own session and turns each line
    it writes on stdout and stderr into one JSON line in LOG_DIR/NAME.jsonl,
    after redacting secrets. Lines are also mirrored, redacted, to this
    process's own stdout/stderr (the container's log) unless --no-mirror.
    Files rotate when the next write would pass --max-bytes: NAME.jsonl,
    NAME.jsonl.1 ... NAME.jsonl.(max-files - 1), the oldest dropped.

    Signals (TERM, INT, HUP, QUIT) are forwarded to the child's process
    group; once the child exits, whatever is left of its group gets TERM,
    then KILL after half a second. The exit status is the child's (128+N
    when a signal ended it), or 128+N when a signal stopped the capture.

    With --restart-delay the child is restarted when it exits: after a run
    shorter than --fast-seconds the delay doubles (up to --restart-max-delay),
    a longer run resets it, and after --give-up-after fast failures in a row
    (0: never) the capture gives up and exits. --state-file keeps a state
    record of all this (see statefile) that `hb services` and `hb status` read.

tx9-logs redact
    Copies stdin to stdout with the same redaction (for checks and scripts).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import IO, Any

from .errors import UsageError
from .eventlog import DEFAULT_MAX_BYTES, DEFAULT_MAX_FILES, NAME, EventLog, timestamp
from .pids import start_ticks
from .redact import Redactor
from .settings import Paths, load_settings, number
from .statefile import own_record, write_state

MAX_LINE = 64 * 1024
GROUP_KILL_GRACE = 0.5
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
SOURCE_RE = re.compile(r'^[a-z0-9][a-z0-9_.-]{0,79}$')


def restart_delay(base: float, maximum: float, fast_failures: int) -> float:
    """Seconds to wait before the next start, given the fast failures in a row."""
    if fast_failures <= 1:
        return base
    factor: int = 2 ** (fast_failures - 1)
    return min(maximum, base * factor)


class RestartPolicy:
    """When and whether to restart a child, from how long its runs lasted."""

    def __init__(self, base: float, maximum: float, give_up_after: int, fast_seconds: float) -> None:
        self.base = base
        self.maximum = max(base, maximum)
        self.give_up_after = give_up_after
        self.fast_seconds = fast_seconds
        self.fast_failures = 0

    def after_run(self, seconds: float) -> tuple[bool, float | None]:
        """(give_up, delay) after a run that lasted `seconds`."""
        if seconds < self.fast_seconds:
            self.fast_failures += 1
        else:
            self.fast_failures = 0
        if self.give_up_after and self.fast_failures >= self.give_up_after:
            return True, None
        return False, restart_delay(self.base, self.maximum, self.fast_failures)


class StateRecord:
    """This capture's state record, rewritten on every change when it has a --state-file."""

    def __init__(self, path: str | None, source: str, fingerprint: str | None) -> None:
        self.path = path
        self.data = own_record(
            source=source,
            fingerprint=fingerprint,
            state='starting',
            child_pid=None,
            restarts=0,
            fast_failures=0,
            last_exit=None,
            last_exit_at=None,
            next_start_at=None,
            started_at=timestamp(),
            detail='',
        )

    def update(self, **changes: Any) -> None:
        self.data.update(changes)
        if self.path:
            # A state file that cannot be written must not stop the child.
            with contextlib.suppress(OSError):
                write_state(self.path, self.data)


CAPTURE_USAGE = """usage: tx9-logs capture --source NAME [--log-dir DIR] [--box NAME]
                        [--max-bytes N] [--max-files N] [--no-mirror]
                        [--restart-delay S [--restart-max-delay S] [--give-up-after N] [--fast-seconds S]]
                        [--state-file PATH] [--fingerprint TEXT] [--stop-grace S] [--unset-env NAME]...
                        -- ARGV...
"""


@dataclasses.dataclass
class CaptureOptions:
    """The options of `tx9-logs capture`, as parse_capture_args read them."""

    source: str = ''
    log_dir: str | None = None
    box: str | None = None
    max_bytes: int | None = None
    max_files: int | None = None
    mirror: bool = True
    restart_delay: float | None = None
    restart_max_delay: float = 60.0
    give_up_after: int = 5
    fast_seconds: float = 10.0
    state_file: str | None = None
    fingerprint: str | None = None
    stop_grace: float = 5.0
    unset_env: list[str] = dataclasses.field(default_factory=list)


# The options that take a number (the CaptureOptions field, and int or float), and those that take a text.
NUMBER_OPTIONS: dict[str, tuple[str, Callable[[str], float]]] = {
    '--max-bytes': ('max_bytes', int),
    '--max-files': ('max_files', int),
    '--restart-delay': ('restart_delay', float),
    '--restart-max-delay': ('restart_max_delay', float),
    '--give-up-after': ('give_up_after', int),
    '--fast-seconds': ('fast_seconds', float),
    '--stop-grace': ('stop_grace', float),
}
TEXT_OPTIONS = {
    '--source': 'source',
    '--log-dir': 'log_dir',
    '--box': 'box',
    '--state-file': 'state_file',
    '--fingerprint': 'fingerprint',
}


def parse_capture_args(args: list[str]) -> tuple[CaptureOptions, list[str]]:
    if '--' not in args:
        raise UsageError('capture needs `--` followed by the command to run')
    split = args.index('--')
    options, argv = args[:split], args[split + 1 :]
    if not argv:
        raise UsageError('capture needs a command after `--`')
    opts = CaptureOptions()
    it = iter(options)
    for option in it:
        name, eq, inline = option.partition('=')
        if name == '--no-mirror' and not eq:
            opts.mirror = False
            continue
        if name not in NUMBER_OPTIONS and name not in TEXT_OPTIONS and name != '--unset-env':
            raise UsageError(f'capture: unknown option {option!r}')
        value = inline if eq else next(it, None)
        if value is None:
            raise UsageError(f'capture: {name} needs a value')
        set_option(opts, name, value)
    if not opts.source or not SOURCE_RE.match(opts.source):
        raise UsageError("capture: --source takes a name of lower-case letters, digits, '.', '_' and '-'")
    return opts, argv


def set_option(opts: CaptureOptions, name: str, value: str) -> None:
    """Set the option `name` (one that takes a value) from its text."""
    if name == '--unset-env':
        opts.unset_env.append(value)
    elif name in TEXT_OPTIONS:
        setattr(opts, TEXT_OPTIONS[name], value)
    else:
        field, kind = NUMBER_OPTIONS[name]
        try:
            number = kind(value)
        except ValueError:
            raise UsageError(f'capture: {name} takes a number, not {value!r}') from None
        if number < 0:
            raise UsageError(f'capture: {name} cannot be negative')
        setattr(opts, field, number)


class Capture:
    """One capture: the child, its output, its restarts, its signals."""

    def __init__(self, opts: CaptureOptions, argv: list[str]) -> None:
        self.opts = opts
        self.argv = argv
        box = opts.box or os.environ.get('TX9_BOX_NAME') or socket.gethostname()
        settings = load_settings()
        self.log = EventLog(
            opts.source,
            box,
            opts.log_dir or Paths(settings).logs,
            opts.max_bytes or number(settings, 'TX9_LOG_MAX_BYTES', DEFAULT_MAX_BYTES),
            opts.max_files or number(settings, 'TX9_LOG_MAX_FILES', DEFAULT_MAX_FILES),
            Redactor(),
            mirror=opts.mirror,
        )
        self.state = StateRecord(opts.state_file, opts.source, opts.fingerprint)
        self.child: subprocess.Popen[bytes] | None = None
        self.stop_signal: int | None = None

    # Signals -----------------------------------------------------------

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if self.stop_signal is None:
            self.stop_signal = signum
            # A child that ignores the signal is killed after the grace period.
            killer = threading.Timer(self.opts.stop_grace, self.signal_child, (signal.SIGKILL,))
            killer.daemon = True
            killer.start()
        self.signal_child(signum)

    def pause(self, seconds: float) -> bool:
        """Sleep, but return early (True) when a stop signal arrives."""
        deadline = time.monotonic() + seconds
        while self.stop_signal is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            time.sleep(min(0.2, remaining))
        return True

    def signal_child(self, signum: int) -> None:
        child = self.child
        if child is not None and child.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(child.pid, signum)

    def reap_group(self, pgid: int) -> None:
        """TERM, then KILL after a short grace, whatever is left of the child's group."""
        try:
            os.killpg(pgid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            return
        deadline = time.monotonic() + GROUP_KILL_GRACE
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)
            except (ProcessLookupError, PermissionError):
                return
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)

    # Output ------------------------------------------------------------

    def pump(self, pipe: IO[bytes], stream: str) -> None:
        pending = b''
        try:
            while True:
                chunk = pipe.readline(MAX_LINE)
                if not chunk:
                    break
                if chunk.endswith(b'\n'):
                    self.log.line(stream, (pending + chunk[:-1]).decode('utf-8', 'replace').rstrip('\r'))
                    pending = b''
                elif len(pending) + len(chunk) >= MAX_LINE:
                    self.log.line(stream, (pending + chunk).decode('utf-8', 'replace'), truncated=True)
                    pending = b''
                else:
                    pending += chunk
        except (OSError, ValueError):
            pass
        if pending:
            self.log.line(stream, pending.decode('utf-8', 'replace').rstrip('\r'))
        with contextlib.suppress(OSError):
            pipe.close()

    # Running -----------------------------------------------------------

    def child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        for name in self.opts.unset_env:
            env.pop(name, None)
        return env

    def run_once(self) -> tuple[int, float]:
        """Run the child to its end; (exit status, seconds it ran)."""
        started = time.monotonic()
        try:
            self.child = subprocess.Popen(  # pylint: disable=consider-using-with
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=self.child_env(),
            )
        except OSError as e:
            self.log.event('process_start_failed', f'cannot start {self.argv[0]}: {e.strerror or e}', 'error')
            return 127, time.monotonic() - started
        child = self.child
        self.state.update(
            state='running',
            child_pid=child.pid,
            child_start=start_ticks(child.pid),
            child_started_at=timestamp(),
            next_start_at=None,
        )
        self.log.event(
            'process_start', f'started {os.path.basename(self.argv[0])} (pid {child.pid})', data={'pid': child.pid}
        )
        if self.stop_signal is not None:
            self.signal_child(self.stop_signal)
        readers = [
            threading.Thread(target=self.pump, args=(child.stdout, 'stdout'), daemon=True),
            threading.Thread(target=self.pump, args=(child.stderr, 'stderr'), daemon=True),
        ]
        for reader in readers:
            reader.start()
        while True:
            try:
                code = child.wait()
                break
            except InterruptedError:
                continue
        self.reap_group(child.pid)
        for reader in readers:
            reader.join(2.0)
        seconds = time.monotonic() - started
        status = 128 - code if code < 0 else code
        how = f'signal {-code}' if code < 0 else f'status {code}'
        self.log.event(
            'process_exit',
            f'{os.path.basename(self.argv[0])} exited with {how} after {seconds:.1f}s',
            None if code == 0 or self.stop_signal is not None else 'warning',
            {'pid': child.pid, 'exit_code': status, 'seconds': round(seconds, 3)},
        )
        self.state.update(child_pid=None, child_start=None, last_exit=status, last_exit_at=timestamp())
        return status, seconds

    def run(self) -> int:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self.on_signal)
        self.state.update(state='starting')
        if self.log.problem:
            # The child runs all the same: its work matters more than its log.
            self.state.update(detail=f'no durable log: {self.log.problem}')
            print(
                f'{NAME}: {self.log.problem}; the output of {self.opts.source} is not kept',
                file=sys.stderr,
                flush=True,
            )
        opts = self.opts
        policy = None
        if opts.restart_delay is not None:
            policy = RestartPolicy(opts.restart_delay, opts.restart_max_delay, opts.give_up_after, opts.fast_seconds)
        try:
            while True:
                status, seconds = self.run_once()
                if self.stop_signal is not None:
                    self.state.update(state='stopped', detail=f'stopped by signal {self.stop_signal}')
                    return 128 + self.stop_signal
                if policy is None:
                    self.state.update(state='exited')
                    return status
                give_up, delay = policy.after_run(seconds)
                restarts = self.state.data['restarts']
                if give_up or delay is None:
                    detail = (
                        f'gave up after {policy.fast_failures} fast failures in a row '
                        f'(each run shorter than {policy.fast_seconds:g}s); last exit status {status}'
                    )
                    self.log.event(
                        'process_gave_up', detail, 'error', {'fast_failures': policy.fast_failures, 'exit_code': status}
                    )
                    self.state.update(state='gave-up', fast_failures=policy.fast_failures, detail=detail)
                    return status
                next_at = time.time() + delay
                self.log.event(
                    'process_restart',
                    f'restarting in {delay:g}s (restart {restarts + 1})',
                    data={'delay': delay, 'fast_failures': policy.fast_failures},
                )
                self.state.update(
                    state='restarting',
                    restarts=restarts + 1,
                    fast_failures=policy.fast_failures,
                    next_start_at=timestamp(next_at),
                    detail=f'last exit status {status}',
                )
                if self.pause(delay):
                    self.state.update(state='stopped', detail=f'stopped by signal {self.stop_signal}')
                    return 128 + (self.stop_signal or signal.SIGTERM)
        finally:
            self.log.close()


def cmd_capture(args: list[str]) -> int:
    opts, argv = parse_capture_args(args)
    return Capture(opts, argv).run()


def cmd_redact(args: list[str]) -> int:
    if args:
        raise UsageError('redact takes no arguments; it filters stdin to stdout')
    redact = Redactor()
    for line in sys.stdin:
        sys.stdout.write(redact(line.rstrip('\n')) + '\n')
    return 0


USAGE = """usage: tx9-logs capture --source NAME [options] -- ARGV...
       tx9-logs redact < input
"""


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ('-h', '--help', 'help'):
        print(USAGE + '\n' + CAPTURE_USAGE, end='', file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    command, args = argv[0], argv[1:]
    try:
        if command == 'capture':
            return cmd_capture(args)
        if command == 'redact':
            return cmd_redact(args)
        raise UsageError(f'unknown command {command!r}')
    except UsageError as e:
        print(f'{NAME}: {e}\n\n{USAGE}', end='', file=sys.stderr)
        return 2
