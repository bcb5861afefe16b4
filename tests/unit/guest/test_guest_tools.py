# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tool versions, read from each tool's --version banner."""

import pytest

from tx9guest import tools


@pytest.mark.parametrize('banner, version', [
    ('2.1.332 (Claude Code)', '2.1.332'),
    ('codex-cli 0.171.0', '0.171.0'),
    ('Hermes Agent v0.19.0 (2026.7.20)\nInstall directory: /opt', '0.19.0'),
    ('executor v1.5.9', '1.5.9'),
    ('v18.20.4', '18.20.4'),
    ('no version here', None),
])
def test_versions_are_read_from_each_tools_banner(banner, version):
    assert tools.parse_version(banner) == version
