# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9-logs capture's command line: the options it takes, their defaults, and what it refuses."""

import pytest

from tx9guest import capture
from tx9guest.errors import UsageError

BAD_SOURCE = "capture: --source takes a name of lower-case letters, digits, '.', '_' and '-'"


def test_a_bare_capture_takes_the_defaults():
    opts, argv = capture.parse_capture_args(['--source', 'agent', '--', 'sleep', '1'])

    assert argv == ['sleep', '1']
    assert opts == capture.CaptureOptions(source='agent')
    assert (opts.mirror, opts.restart_delay, opts.restart_max_delay, opts.give_up_after) == (True, None, 60.0, 5)
    assert (opts.fast_seconds, opts.stop_grace, opts.unset_env) == (10.0, 5.0, [])


def test_every_option_is_read_with_its_type_whether_inline_or_separate():
    opts, argv = capture.parse_capture_args([
        '--source=service-x', '--log-dir', '/logs', '--box=demo', '--max-bytes', '2048', '--max-files=3',
        '--no-mirror', '--restart-delay', '1.5', '--restart-max-delay=30', '--give-up-after', '0',
        '--fast-seconds', '2', '--state-file', '/run/x.state', '--fingerprint=abc', '--stop-grace', '9',
        '--unset-env', 'A', '--unset-env=B', '--', 'run', '--', 'me',
    ])

    assert argv == ['run', '--', 'me']
    assert opts == capture.CaptureOptions(
        source='service-x', log_dir='/logs', box='demo', max_bytes=2048, max_files=3, mirror=False,
        restart_delay=1.5, restart_max_delay=30.0, give_up_after=0, fast_seconds=2.0,
        state_file='/run/x.state', fingerprint='abc', stop_grace=9.0, unset_env=['A', 'B'],
    )
    assert isinstance(opts.max_bytes, int) and isinstance(opts.restart_delay, float)


@pytest.mark.parametrize('args, message', [
    (['--source', 'a'], 'capture needs `--` followed by the command to run'),
    (['--source', 'a', '--'], 'capture needs a command after `--`'),
    (['--source', 'a', '--colour', '--', 'x'], "capture: unknown option '--colour'"),
    (['--source', 'a', '--no-mirror=1', '--', 'x'], "capture: unknown option '--no-mirror=1'"),
    (['--source', 'a', '--box'], 'capture needs `--` followed by the command to run'),
    (['--source', 'a', '--box', '--', 'x'], 'capture: --box needs a value'),
    (['--source', 'a', '--log-dir=/l', '--max-files', '--', 'x'], 'capture: --max-files needs a value'),
    (['--source', 'a', '--max-bytes', 'lots', '--', 'x'], "capture: --max-bytes takes a number, not 'lots'"),
    (['--source', 'a', '--max-files', '2.5', '--', 'x'], "capture: --max-files takes a number, not '2.5'"),
    (['--source', 'a', '--stop-grace=-1', '--', 'x'], 'capture: --stop-grace cannot be negative'),
    (['--', 'x'], BAD_SOURCE),
    (['--source', 'Agent', '--', 'x'], BAD_SOURCE),
])
def test_a_wrong_command_line_is_a_usage_error_that_says_what_is_wrong(args, message):
    with pytest.raises(UsageError) as raised:
        capture.parse_capture_args(args)

    assert str(raised.value) == message
