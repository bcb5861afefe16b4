# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The workload loop (`hb workload`): the container's main process, one reconcile pass every 20 s."""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import time
from types import FrameType

from .cmdargs import expect_no_args
from .context import Context
from .errors import HbError
from .files import ensure_runtime
from .pids import pid_alive
from .quiesce import run_pass, stop_everything
from .statefile import own_record, read_state, write_state

DEFAULT_INTERVAL = 20.0


def log(message: str) -> None:
    print(f'hb-workload: {message}', flush=True)


def workload_running(ctx: Context) -> bool:
    record = read_state(ctx.paths.workload_pid)
    return pid_alive(record.get('pid'), record.get('pid_start')) if record else False


def cmd_workload(ctx: Context, args: list[str]) -> int:
    expect_no_args('workload', args)
    stop: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.append(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    interval = max(1.0, float(os.environ.get('HB_WORKLOAD_INTERVAL') or DEFAULT_INTERVAL))
    once = os.environ.get('HB_WORKLOAD_ONCE') == '1'
    with contextlib.suppress(HbError, OSError):
        ensure_runtime(ctx.paths)
        write_state(ctx.paths.workload_pid, own_record(), 0o644)
    log(f'started as {pwd.getpwuid(os.geteuid()).pw_name}, every {interval:g}s')
    last_problems, last_quiesced = None, None
    while not stop:
        ctx = Context()  # settings and markers are read afresh every pass
        try:
            changes, problems = run_pass(ctx)
        # The loop is the container's main process and keeps supervising whatever one pass hits;
        # an unexpected error is logged as a problem of that pass (with its type), never hidden.
        except Exception as e:  # noqa: BLE001  # pylint: disable=broad-exception-caught
            changes, problems = [], [f'unexpected {type(e).__name__}: {e}']
        quiesced = ctx.quiesced_by
        if quiesced != last_quiesced:
            log(f'quiesced by {quiesced}: services and the gateway stay stopped' if quiesced else 'running')
            last_quiesced = quiesced
        for line in changes:
            log(line)
        if problems != last_problems:
            for line in problems:
                log(f'FAILED: {line}')
            last_problems = problems
        if once:
            return 1 if problems else 0
        deadline = time.monotonic() + interval
        while not stop and time.monotonic() < deadline:
            time.sleep(0.2)
    signum = stop[0]
    # The container is stopping: end the services and the gateway cleanly
    # before Docker's grace period runs out (the quiesce marker is untouched).
    try:
        for line in stop_everything(Context(), 'the container is stopping', grace=2.0, wait=3.0):
            log(line)
    except (HbError, OSError) as e:
        log(f'FAILED to stop cleanly: {e}')
    log(f'stopping on signal {signum}')
    return 128 + signum
