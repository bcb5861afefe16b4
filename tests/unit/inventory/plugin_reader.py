# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reads an inventory with the col_agents.tx9.boxes plugin through Ansible's own inventory manager, in a
process of its own (Ansible's collection loader must own the ansible_collections package), with the
listing of the Docker hosts answered from a file. Prints the groups, every host's variables and the
hosts the listing was asked for, as JSON.

    python plugin_reader.py COLLECTIONS_PATH LISTINGS_JSON SOURCE...
"""


import json
import sys

from ansible.errors import AnsibleError
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader, inventory_loader
from ansible.vars.manager import VariableManager


def main(collections, listings_path, sources):
    init_plugin_loader([collections])
    with open(listings_path) as handle:
        listings = json.load(handle)
    plugin = inventory_loader.get('col_agents.tx9.boxes')
    calls = []

    def listing(hosts, python, collections_paths=None, extra_args=(), timeout=600):
        calls.append(dict(hosts=hosts, collections_paths=collections_paths, timeout=timeout))
        return dict((h, listings[h]) for h in hosts if h in listings), dict(
            (h, 'unreachable in this test') for h in hosts if h not in listings)
    sys.modules[type(plugin).__module__].list_on_hosts = listing
    loader = DataLoader()
    try:
        inventory = InventoryManager(loader=loader, sources=sources)
    except AnsibleError as exc:
        # Each plugin's own reason is in the warnings on stderr.
        return dict(error=str(exc))
    manager = VariableManager(loader=loader, inventory=inventory)
    groups = dict((name, sorted(h.name for h in group.get_hosts())) for name, group in inventory.groups.items())
    variables = {}
    for host in inventory.get_hosts():
        found = manager.get_vars(host=host)
        variables[host.name] = dict((k, v) for k, v in found.items() if k.startswith(('ansible_', 'tx9_', 'x_')))
    return dict(groups=groups, vars=variables, calls=calls)


if __name__ == '__main__':
    print(json.dumps(main(sys.argv[1], sys.argv[2], sys.argv[3:]), default=str))
