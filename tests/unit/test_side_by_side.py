# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scripts/side-by-side.sh, run for real with a stand-in for make: verdicts, output, and streams that die."""

import os
import subprocess

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                      'scripts', 'side-by-side.sh')
# How long a run may take before the test fails instead of hanging: a hang guard, not a speed bound
# (every target of the stand-in make ends at once).
HANG_GUARD = 120

# The stand-in for make: called as `MAKE --no-print-directory TARGET`, as the script calls make.
FAKE_MAKE = '''#!/usr/bin/env bash
case "$2" in
    ok*) echo "$2 ran" ;;
    bad) echo "bad ran"; exit 3 ;;
    crash) echo "crash ran"; kill -KILL $$ ;;
    # Takes its whole process group down: the stream that ran it dies before it writes a status.
    die) echo "die ran"; kill -KILL 0 ;;
    *) echo "no target $2"; exit 2 ;;
esac
'''


def side_by_side(tmp_path, *streams):
    """(exit code, output) of scripts/side-by-side.sh STREAM... in tmp_path with the stand-in make."""
    make = tmp_path / 'fake-make'
    make.write_text(FAKE_MAKE)
    os.chmod(str(make), 0o755)
    env = dict(os.environ, MAKE=str(make), SIDE_BY_SIDE_POLL='0.1')
    try:
        proc = subprocess.run([SCRIPT] + list(streams), cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, timeout=HANG_GUARD,
                              start_new_session=True, check=False)
    except subprocess.TimeoutExpired as expired:
        output = expired.output or b''
        output = output.decode('utf-8', 'replace') if isinstance(output, bytes) else output
        pytest.fail('side-by-side.sh still waited after %s s:\n%s' % (HANG_GUARD, output))
    return proc.returncode, proc.stdout


def summary(output):
    """The lines after the summing-up header."""
    return output.split('== side by side, summed up ==\n', 1)[1].splitlines()


def test_when_every_target_passes_each_is_reported_with_its_output_and_the_script_exits_0(tmp_path):
    code, output = side_by_side(tmp_path, 'ok1+ok2', 'ok3')

    assert code == 0, output
    for target in ('ok1', 'ok2', 'ok3'):
        assert '== %s: passed in 0m 0' % target in output
        assert '%s ran\n' % target in output
    assert sorted(line.split(':')[0] for line in summary(output)) == ['ok1', 'ok2', 'ok3']
    assert (tmp_path / '.cache' / 'logs' / 'ok2.log').read_text() == 'ok2 ran\n'


def test_a_failing_target_is_reported_with_its_exit_code_the_next_one_of_its_stream_still_runs_and_the_script_fails(
        tmp_path):
    code, output = side_by_side(tmp_path, 'bad+ok1', 'crash', 'ok2')

    assert code == 1, output
    lines = dict(line.split(': ', 1) for line in summary(output))
    assert lines['bad'].startswith('FAILED (exit 3) in ')
    assert lines['crash'].startswith('FAILED (exit 137) in '), 'a make that dies still leaves its stream a status'
    assert lines['ok1'].startswith('passed in ') and lines['ok2'].startswith('passed in ')
    assert 'bad ran\n' in output and 'crash ran\n' in output


def test_a_stream_that_dies_before_its_status_fails_its_target_and_the_rest_of_it_instead_of_waiting_forever(
        tmp_path):
    code, output = side_by_side(tmp_path, 'ok1+die+ok2', 'ok3')

    assert code == 1, output
    lines = dict(line.split(': ', 1) for line in summary(output))
    assert lines['die'].startswith(
        'FAILED (its stream died while it ran, killed by signal 9, before it wrote a status) in '), lines['die']
    assert lines['ok2'].startswith('FAILED (never ran: its stream died before it, killed by signal 9) in ')
    assert lines['ok1'].startswith('passed in ') and lines['ok3'].startswith('passed in ')
    assert 'die ran\n' in output, 'the output it wrote before it died is shown'
    assert not (tmp_path / '.cache' / 'logs' / 'ok2.log').exists()


def test_a_target_named_in_two_streams_is_refused_before_anything_runs(tmp_path):
    code, output = side_by_side(tmp_path, 'ok1+ok2', 'ok2')

    assert code == 2
    assert 'ok2 is named twice' in output
    assert not (tmp_path / '.cache' / 'logs' / 'ok1.log').exists()
