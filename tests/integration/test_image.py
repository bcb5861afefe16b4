# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The box image, built from the collection's assets through ansible-playbook."""


import os

from conftest import IMAGE, random_prefix, recap

TOOLS = ('claude', 'codex', 'hermes', 'executor')


def run_in_image(client, image, argv, user='agent'):
    """Run argv in a throwaway container of image; (exit code, output)."""
    container = client.containers.create(image, entrypoint=argv, user=user)
    try:
        container.start()
        code = container.wait(timeout=120)['StatusCode']
        return code, container.logs().decode('utf-8', 'replace')
    finally:
        container.remove(force=True)


def test_the_image_is_labelled_with_its_version_and_assets_hash(built_image, client):
    labels = client.images.get(built_image['tag']).labels
    assert labels['tx9'] == '1'
    assert labels['tx9.version'] == '0.1.0'
    assert len(labels['tx9.assets']) == 64


def test_every_tool_answers_its_version_as_the_agent_user(built_image, client):
    for tool in TOOLS:
        code, output = run_in_image(client, built_image['tag'], [tool, '--version'])
        assert code == 0, '%s --version failed: %s' % (tool, output)
        assert any(ch.isdigit() for ch in output), output


def test_hb_versions_lists_every_tool(built_image, client):
    code, output = run_in_image(client, built_image['tag'], ['/opt/tx9/bin/hb', 'versions'])
    assert code == 0, output
    for tool in TOOLS:
        line = [ln for ln in output.splitlines() if ln.split()[:1] == [tool]]
        assert line, 'hb versions does not list %s:\n%s' % (tool, output)
        assert 'missing' not in line[0]


def build_logs(state_home):
    """{name: (size, mtime)} of the files in the state home's log folder, where every build writes its log."""
    folder = os.path.join(state_home, 'logs')
    if not os.path.isdir(folder):
        return {}
    found = {}
    for name in os.listdir(folder):
        info = os.stat(os.path.join(folder, name))
        found[name] = (info.st_size, info.st_mtime_ns)
    return found


def test_a_second_build_of_the_same_assets_changes_nothing_and_returns_without_rebuilding(
        built_image, playbooks, client, state_home):
    logs_before = build_logs(state_home)
    if built_image['tag'] == IMAGE:
        changed = recap(playbooks.run('playbooks/build-image.yml').stdout)['changed']
    else:
        # The playbook builds tx9-box:0.1.0; a run on another tag leaves that image alone.
        result = playbooks.module_ok('tx9_image', dict(image=built_image['tag']))
        changed = result['changed']
        assert result['built'] is False and result['log_path'] is None, result
    assert not changed
    # A build, even one Docker's cache makes quick, writes its output to a log here; a no-op writes none.
    # (How fast a no-op is, tests/bench measures.)
    assert build_logs(state_home) == logs_before
    assert client.images.get(built_image['tag']).id == built_image['id']


def test_check_mode_on_a_missing_image_reports_a_build_and_builds_nothing(built_image, playbooks, client):
    tag = 'tx9-box:%s-checkmode-probe' % random_prefix()
    result = playbooks.module_ok('tx9_image', dict(image=tag), '--check')
    assert result['changed'] is True
    assert result['built'] is True
    assert result['log_path'] is None
    assert not client.images.list(name=tag)


def test_the_build_log_is_returned_and_readable_on_the_host(built_image, playbooks, client):
    tag = 'tx9-box:%s-log-probe' % random_prefix()
    try:
        result = playbooks.module_ok('tx9_image', dict(image=tag))
        assert result['changed'] is True
        # The digest told the action plugin a build was due; it sent the assets and the build ran.
        assert 'assets_needed' not in result and result['assets_hash'] == client.images.get(tag).labels['tx9.assets']
        with open(result['log_path']) as handle:
            log = handle.read()
        assert 'Successfully tagged %s' % tag in log or 'naming to' in log
    finally:
        if client.images.list(name=tag):
            client.images.remove(tag, force=True)
