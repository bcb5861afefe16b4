# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""hb's command line: usage and exit codes."""

from tx9guest import cli, errors


def test_unknown_command_prints_usage_on_stderr_and_exits_2(capsys):
    assert cli.main(['frobnicate']) == 2
    err = capsys.readouterr().err
    assert "unknown command 'frobnicate'" in err and 'usage: hb' in err


def test_unexpected_arguments_print_usage_and_exit_2(capsys):
    assert cli.main(['status', '--yaml']) == 2
    assert 'usage: hb' in capsys.readouterr().err


def test_failures_exit_1_with_a_sentence_naming_the_command(monkeypatch, capsys):
    def boom(ctx, args):
        raise errors.HbError('the thing is broken; run `hb fix`')
    monkeypatch.setitem(cli.COMMANDS, 'doctor', boom)
    assert cli.main(['doctor']) == 1
    assert capsys.readouterr().err.strip() == 'hb doctor: the thing is broken; run `hb fix`'
