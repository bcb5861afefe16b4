# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tool versions, read from each tool's --version banner."""

import os

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


@pytest.fixture
def fake_tools(tmp_path, monkeypatch):
    """Two tool files on a PATH of their own, and a record of which tools --version was asked of."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    for name in ('claude', 'codex'):
        (bin_dir / name).write_text('#!/bin/sh\necho %s 1.0.0\n' % name)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setattr(tools, 'find_tool', lambda name: str(bin_dir / name) if (bin_dir / name).exists() else None)
    asked = []

    def versions(names):
        asked.append(sorted(names))
        return dict((name, ('1.0.0', None)) for name in names)

    monkeypatch.setattr(tools, 'all_versions', versions)
    return bin_dir, asked, str(tmp_path / 'state' / 'tool-versions.json')


def test_a_tool_whose_file_did_not_change_is_not_asked_its_version_again(fake_tools):
    _bin_dir, asked, cache = fake_tools
    first = tools.cached_versions(['claude', 'codex'], cache)
    second = tools.cached_versions(['claude', 'codex'], cache)
    assert first == second == dict(claude=('1.0.0', None), codex=('1.0.0', None))
    assert asked == [['claude', 'codex']]


def test_a_tool_whose_file_changed_or_went_is_asked_again(fake_tools):
    bin_dir, asked, cache = fake_tools
    tools.cached_versions(['claude', 'codex'], cache)
    (bin_dir / 'codex').write_text('#!/bin/sh\necho codex 2.0.0 with a longer banner\n')
    (bin_dir / 'claude').unlink()
    tools.cached_versions(['claude', 'codex'], cache)
    assert asked == [['claude', 'codex'], ['claude', 'codex']]


def test_an_unreadable_cache_is_no_cache(fake_tools):
    _bin_dir, asked, cache = fake_tools
    os.makedirs(os.path.dirname(cache))
    with open(cache, 'w') as handle:
        handle.write('[not a mapping')
    assert tools.cached_versions(['codex'], cache) == dict(codex=('1.0.0', None))
    assert asked == [['codex']]
