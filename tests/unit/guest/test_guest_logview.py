# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`hb logs`: log names stay inside the log directory."""

from tx9guest import cli


def test_log_names_cannot_leave_the_log_directory():
    assert cli.main(['logs', '../etc/passwd']) == 2
