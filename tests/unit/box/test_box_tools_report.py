# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tools report of tx9_info: its script run for real by python3 on a tree laid out as in a box, and its
reading of what the script prints."""


import json
import subprocess
import sys

from ansible_collections.col_agents.tx9.plugins.module_utils._box import tools_report
from ansible_collections.col_agents.tx9.plugins.module_utils._box.tools import marker_name


def write_json(path, value):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def package_json(root, package, version):
    write_json(root / package / 'package.json', dict(name=package, version=version))


def box_install(tools_root, tool, package, command, version, requested=None, executable=True):
    home = tools_root / tool
    package_json(home / 'node_modules', package, version)
    binary = home / 'node_modules' / '.bin' / command
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_text('#!/bin/sh\n')
    binary.chmod(0o755 if executable else 0o644)
    write_json(home / marker_name(package, requested or version),
               dict(tool=tool, package=package, requested=requested or version, version=version))


def report(tmp_path):
    """What tx9_info would read from the tree under tmp_path."""
    argv = tools_report.report_argv()
    assert argv[:2] == ['python3', '-c']
    argv[3], argv[4] = str(tmp_path / 'tools'), str(tmp_path / 'image')
    done = subprocess.run([sys.executable] + argv[1:], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return tools_report.parse_report(done.stdout)


def test_a_box_with_only_the_images_tools_reports_the_image_as_their_source(tmp_path):
    package_json(tmp_path / 'image', '@openai/codex', '0.171.0')
    package_json(tmp_path / 'image', '@anthropic-ai/claude-code', '2.1.332')
    found = report(tmp_path)
    assert found == dict(
        codex=dict(installed='0.171.0', source='image', pinned=None, package='@openai/codex'),
        claude=dict(installed='2.1.332', source='image', pinned=None, package='@anthropic-ai/claude-code'))


def test_a_pinned_install_answers_from_the_box_and_names_what_was_asked(tmp_path):
    package_json(tmp_path / 'image', '@openai/codex', '0.171.0')
    box_install(tmp_path / 'tools', 'codex', '@openai/codex', 'codex', '0.169.0')
    box_install(tmp_path / 'tools', 'claude', '@anthropic-ai/claude-code', 'claude', '2.1.400', requested='latest')
    found = report(tmp_path)
    assert found['codex'] == dict(installed='0.169.0', source='box', pinned='0.169.0', package='@openai/codex')
    assert found['claude'] == dict(installed='2.1.400', source='box', pinned='latest',
                                   package='@anthropic-ai/claude-code')


def test_a_pin_whose_files_are_gone_shows_pinned_with_the_image_answering(tmp_path):
    package_json(tmp_path / 'image', '@openai/codex', '0.171.0')
    tools_root = tmp_path / 'tools'
    box_install(tools_root, 'codex', '@openai/codex', 'codex', '0.169.0')
    # What an import leaves: the marker without node_modules.
    subprocess.run(['rm', '-rf', str(tools_root / 'codex' / 'node_modules')], check=True)
    assert report(tmp_path)['codex'] == dict(installed='0.171.0', source='image', pinned='0.169.0',
                                             package='@openai/codex')


def test_a_box_install_whose_command_is_not_executable_does_not_answer(tmp_path):
    package_json(tmp_path / 'image', '@openai/codex', '0.171.0')
    box_install(tmp_path / 'tools', 'codex', '@openai/codex', 'codex', '0.169.0', executable=False)
    assert report(tmp_path)['codex']['source'] == 'image'


def test_a_marker_naming_another_version_than_the_files_does_not_answer(tmp_path):
    tools_root = tmp_path / 'tools'
    box_install(tools_root, 'codex', '@openai/codex', 'codex', '0.169.0')
    package_json(tools_root / 'codex' / 'node_modules', '@openai/codex', '0.170.0')
    found = report(tmp_path)['codex']
    assert found == dict(installed=None, source=None, pinned='0.169.0', package='@openai/codex')


def test_unreadable_output_is_no_report():
    assert tools_report.parse_report('') is None
    assert tools_report.parse_report('{"codex": "0.1.0", "claude": {}}') is None
    assert tools_report.parse_report('Traceback (most recent call last):\n  boom') is None


def test_a_marker_that_is_not_an_object_counts_as_none():
    text = json.dumps(dict(codex=dict(marker=['x'], box='0.169.0', image='0.171.0'),
                           claude=dict(marker=None, box=None, image=None)))
    found = tools_report.parse_report(text)
    assert found['codex'] == dict(installed='0.171.0', source='image', pinned=None, package='@openai/codex')
    assert found['claude'] == dict(installed=None, source=None, pinned=None, package='@anthropic-ai/claude-code')
