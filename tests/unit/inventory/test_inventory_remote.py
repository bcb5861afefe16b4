# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Listing many Docker hosts through one ansible run: its private inventory and reading its results."""


import os
import sys

from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible.vars.manager import VariableManager

from ansible_collections.col_agents.tx9.plugins.plugin_utils._inventory import remote

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
COLLECTIONS = os.path.join(REPO_ROOT, '.cache', 'collections')

OUTPUT = '''fleet1 | SUCCESS => {
    "boxes": [
        {
            "name": "dev",
            "state": "running",
            "dashboard_url": "http://10.0.0.11:32768/"
        }
    ],
    "changed": false
}
web-1.example.com | SUCCESS => {
    "boxes": [],
    "changed": false
}
fleet3 | FAILED! => {
    "cause": "DOCKER_UNAVAILABLE",
    "changed": false,
    "msg": "The Docker engine at unix:///var/run/docker.sock does not answer"
}
fleet4 | UNREACHABLE! => {
    "changed": false,
    "msg": "Failed to connect to the host via ssh: timed out",
    "unreachable": true
}
'''


def test_results_are_read_per_host_from_the_minimal_callbacks_output():
    results = remote.parse_results('[WARNING]: something first\n' + OUTPUT)
    assert sorted(results) == ['fleet1', 'fleet3', 'fleet4', 'web-1.example.com']
    listed = dict(name='dev', state='running', dashboard_url='http://10.0.0.11:32768/')
    assert results['fleet1'] == ('SUCCESS', dict(boxes=[listed], changed=False))
    assert remote.host_outcome(*results['fleet1'])[0][0]['name'] == 'dev'
    assert remote.host_outcome(*results['web-1.example.com']) == ([], None)


def test_a_failed_or_unreachable_host_gives_its_reason_and_no_boxes():
    results = remote.parse_results(OUTPUT)
    assert remote.host_outcome(*results['fleet3']) == (
        None, 'DOCKER_UNAVAILABLE: The Docker engine at unix:///var/run/docker.sock does not answer')
    assert remote.host_outcome(*results['fleet4']) == (None, 'Failed to connect to the host via ssh: timed out')


def test_the_private_inventory_is_read_by_ansible_with_every_string_left_untemplated(tmp_path):
    hosts = {'fleet1': dict(ansible_host='10.0.0.11', ansible_port=2222, ansible_become=True,
                            ansible_user="{{ lookup('pipe', 'id -un') }}", ansible_ssh_common_args='-o "A=b c"',
                            ansible_nested={'list': ['x', 1, None]}),
             'h "odd"': dict(ansible_host='ünïcode')}
    path = tmp_path / 'hosts.yml'
    path.write_text(remote.inventory_text(hosts))
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(path)])
    manager = VariableManager(loader=loader, inventory=inventory)
    assert sorted(h.name for h in inventory.get_hosts()) == ['fleet1', 'h "odd"']
    variables = manager.get_vars(host=inventory.get_host('fleet1'))
    templar = Templar(loader=loader, variables=variables)
    assert templar.template(variables['ansible_user']) == "{{ lookup('pipe', 'id -un') }}"
    assert variables['ansible_port'] == 2222 and variables['ansible_become'] is True
    assert variables['ansible_ssh_common_args'] == '-o "A=b c"'
    assert variables['ansible_nested'] == {'list': ['x', 1, None]}
    assert manager.get_vars(host=inventory.get_host('h "odd"'))['ansible_host'] == 'ünïcode'


def test_a_host_whose_engine_does_not_answer_is_reported_with_its_cause_by_a_real_ansible_run(monkeypatch):
    monkeypatch.setenv('DOCKER_HOST', 'unix:///nonexistent/docker.sock')
    monkeypatch.setenv('ANSIBLE_CONFIG', os.path.join(REPO_ROOT, 'ansible.cfg'))
    hosts = {'here': dict(ansible_connection='local', ansible_python_interpreter=sys.executable)}
    listings, errors = remote.list_on_hosts(hosts, sys.executable, [COLLECTIONS], timeout=300)
    assert listings == {}
    assert errors['here'].startswith('DOCKER_UNAVAILABLE: ') and 'nonexistent' in errors['here']


def test_a_listing_that_outlives_its_timeout_names_every_host_it_did_not_list(monkeypatch):
    monkeypatch.setenv('ANSIBLE_CONFIG', os.path.join(REPO_ROOT, 'ansible.cfg'))
    hosts = dict((name, dict(ansible_connection='local', ansible_python_interpreter=sys.executable))
                 for name in ('a', 'b'))
    listings, errors = remote.list_on_hosts(hosts, sys.executable, [COLLECTIONS], timeout=0.01)
    assert listings == {}
    assert errors == dict(a='the listing did not finish within 0.01 s', b='the listing did not finish within 0.01 s')


def test_no_hosts_run_nothing():
    assert remote.list_on_hosts({}, '/nonexistent/python') == ({}, {})
