# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The col_agents.tx9.boxes inventory plugin on the bed, over real SSH: boxes on both hosts become inventory
hosts in the right groups, a backup takes a box out of tx9_backup_stale, a play against tx9_running reaches
each box through its own host, and playbooks/list.yml prints one table of them all with the CPU, memory and
volume space each box uses."""


import json
import os
import re
import shutil
import tempfile
import uuid

import pytest

from conftest import PLAYS, REPO_ROOT, graph_groups, inventory, plain

PASSWORD = 'fleet inventory pass phrase'
BACKUP_DIR = '/tmp/tx9-fleet-inventory-backups'


@pytest.fixture(scope='module')
def boxes(fleet, controller_image):
    """On every host a running box of one shared name; on the first host also a stopped one."""
    fleet.prepare()
    first = fleet.hosts[0].name
    names = dict(running='inv%s' % uuid.uuid4().hex[:6], stopped='ins%s' % uuid.uuid4().hex[:6])
    work = tempfile.mkdtemp(prefix='tx9-fleet-inventory-')
    config = os.path.join(work, 'tx9.boxes.yml')
    with open(config, 'w') as handle:
        handle.write('plugin: col_agents.tx9.boxes\nhost_group: fleet\nbackup_max_age: 24h\n')
    try:
        made = fleet.module('tx9_box', 'fleet', dict(name=names['running']))
        for host in fleet.hosts:
            assert not made[host.name].get('failed') and made[host.name]['box']['state'] == 'running', made
        stopped = fleet.module('tx9_box', first, dict(name=names['stopped'], state='stopped'))[first]
        assert not stopped.get('failed') and stopped['box']['state'] == 'stopped', stopped
        yield dict(names, config=config, work=work, first=first)
    finally:
        fleet.module('tx9_box', 'fleet', dict(name=names['running'], state='absent'))
        fleet.module('tx9_box', first, dict(name=names['stopped'], state='absent'))
        for host in fleet.hosts:
            fleet.ssh(host, ['rm', '-rf', BACKUP_DIR])
        shutil.rmtree(work, ignore_errors=True)


def token_of(fleet, host, box):
    code, output = fleet.ssh(host, ['cat', '/root/.tx9/boxes/%s.env' % box])
    assert code == 0, output
    token = re.search(r'^EXECUTOR_MCP_TOKEN=(\S+)$', output, re.MULTILINE).group(1)
    assert len(token) >= 32
    return token


def test_the_inventory_lists_the_boxes_of_both_hosts_in_their_groups_and_never_a_token(fleet, boxes):
    running, stopped, first = boxes['running'], boxes['stopped'], boxes['first']
    second = fleet.hosts[1].name
    groups = graph_groups(inventory(fleet, boxes['config'], '--graph')[0])
    assert groups['tx9_running'] == sorted('%s@%s' % (running, h.name) for h in fleet.hosts)
    assert groups['tx9_stopped'] == ['%s@%s' % (stopped, first)]
    assert groups['tx9_host_%s' % first] == sorted(['%s@%s' % (running, first), '%s@%s' % (stopped, first)])
    assert groups['tx9_host_%s' % second] == ['%s@%s' % (running, second)]
    assert sorted(groups['tx9_backup_stale']) == sorted(groups['tx9_running'] + groups['tx9_stopped'])
    assert 'tx9_drift' not in groups

    text = inventory(fleet, boxes['config'], '--list')[0]
    listed = plain(json.loads(text))
    hostvars = listed['_meta']['hostvars']
    for host in fleet.hosts:
        box_host = hostvars['%s@%s' % (running, host.name)]
        assert (box_host['tx9_box_name'], box_host['tx9_host'], box_host['tx9_state']) == (running, host.name, 'running')
        assert box_host['ansible_host'] == host.address and box_host['ansible_user'] == 'root'
        assert box_host['ansible_ssh_private_key_file'] == fleet.bed.key
        assert box_host['tx9_dashboard_url'].startswith('http://%s:' % host.address)
        assert box_host['tx9_version'] == '0.1.0' and box_host['tx9_drift'] is False
        assert box_host['tx9_last_backup'] is None and box_host['tx9_backup_stale'] is True
    for host in fleet.hosts:
        assert token_of(fleet, host, running) not in text
    assert token_of(fleet, fleet.hosts[0], stopped) not in text


def test_a_verified_backup_takes_the_box_out_of_tx9_backup_stale_on_its_host_only(fleet, boxes):
    running, first = boxes['running'], boxes['first']
    saved = fleet.module('tx9_backup', first, dict(name=running, dest=BACKUP_DIR, password=PASSWORD))[first]
    assert not saved.get('failed') and saved['path'].startswith(BACKUP_DIR), saved
    info = fleet.module('tx9_info', first, dict(name=running))[first]
    last = info['boxes'][0]['last_backup']
    assert (last['path'], last['sha256'], last['verified']) == (saved['path'], saved['sha256'], True)

    groups = graph_groups(inventory(fleet, boxes['config'], '--graph')[0])
    assert '%s@%s' % (running, first) not in groups['tx9_backup_stale']
    for host in fleet.hosts[1:]:
        assert '%s@%s' % (running, host.name) in groups['tx9_backup_stale']
    assert '%s@%s' % (boxes['stopped'], first) in groups['tx9_backup_stale']
    box_host = plain(json.loads(inventory(fleet, boxes['config'], '--host', '%s@%s' % (running, first))[0]))
    assert box_host['tx9_last_backup']['path'] == saved['path'] and box_host['tx9_backup_stale'] is False


def test_a_play_against_tx9_running_reaches_each_box_through_its_own_host(fleet, boxes):
    running = boxes['running']
    results_dir = tempfile.mkdtemp(prefix='tx9-fleet-box-hosts-', dir=boxes['work'])
    output = fleet.playbook(os.path.join(PLAYS, 'box_hosts.yml'), '-i', boxes['config'], '-e',
                            'result_dir=%s' % results_dir)
    assert 'are not in the inventory' not in output, output[-3000:]
    results = {}
    for name in os.listdir(results_dir):
        with open(os.path.join(results_dir, name)) as handle:
            results[name[:-len('.json')]] = json.load(handle)
    assert sorted(results) == sorted('%s@%s' % (running, h.name) for h in fleet.hosts)
    for host in fleet.hosts:
        result = results['%s@%s' % (running, host.name)]
        assert (result['hostname'], result['tx9_host']) == (host.name, host.name)
        assert [b['name'] for b in result['info']['boxes']] == [running]
        # The agent container tx9_info saw is the one on that host's engine.
        code, agent_id = fleet.ssh(host, ['docker', 'inspect', '--format', '{{.Id}}', 'tx9-%s-agent' % running])
        assert code == 0 and result['info']['boxes'][0]['containers']['agent']['id'] in agent_id.strip()


def table_rows(lines):
    """The list table's rows as cell lists, the dashboard next (whether it shares the row's line or has its own
    indented line below; '-' for a box without one), and the row's tools line last ('-' without one)."""
    below = lines[1].strip() == 'DASHBOARD'
    rows = []
    for line in lines:
        if line.startswith('    tools: '):
            rows[-1][-1] = line.strip()
        elif line.startswith(' '):
            rows[-1][-2] = line.strip()
        else:
            rows.append(line.split() + (['-'] if below else []) + ['-'])
    return rows


def test_the_list_playbook_prints_one_table_of_the_boxes_of_every_host_with_what_each_uses(fleet, boxes):
    running, stopped, first = boxes['running'], boxes['stopped'], boxes['first']
    output = fleet.playbook(os.path.join(REPO_ROOT, 'playbooks', 'list.yml'))
    lines = re.findall(r'^\s+"(.*)",?$', output, re.MULTILINE)
    assert all(len(line) <= 100 for line in lines), lines
    table = table_rows(lines)
    assert table[0] == ['HOST', 'BOX', 'STATE', 'VERSION', 'DRIFT', 'CPU', 'MEMORY', 'VOLUME', 'DASHBOARD', '-']
    rows = dict(((row[0], row[1]), row) for row in table[1:])
    size = r'\d+(\.\d)?[BKMGTP]'
    for host in fleet.hosts:
        row = rows[(host.name, running)]
        assert row[2:5] == ['running', '0.1.0', 'no'] and row[8].startswith('http://%s:' % host.address), row
        assert re.match(r'^tools: claude [\d.]+ \(image\), codex [\d.]+ \(image\)$', row[9]), row
        assert re.match(r'^\d+(\.\d)?%$', row[5]), row
        assert re.match('^%s/%s$' % (size, size), row[6]) and re.match('^%s$' % size, row[7]), row
    assert rows[(first, stopped)][2:8] == ['stopped', '0.1.0', 'no', '-', '-', rows[(first, stopped)][7]]
    assert rows[(first, stopped)][-1] == '-'
    assert re.match('^%s$' % size, rows[(first, stopped)][7]), rows[(first, stopped)]
    assert len(rows) == len(fleet.hosts) + 1
    # One table: every row's cells start where their column's title does.
    header = lines[0]
    for line in lines[1:]:
        if line.startswith(' '):
            continue
        host, box, state = line.split()[:3]
        assert line.index(box, len(host)) == header.index('BOX'), lines
        assert line.index(state, header.index('BOX') + len(box)) == header.index('STATE'), lines
