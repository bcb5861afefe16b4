# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's molecule scenarios (extensions/molecule) through `molecule test` on the bed.

Each scenario runs its whole test sequence with its destroy held back, so that the box tokens
it minted can be read from the hosts and looked for in the output; then `molecule destroy`
removes what the scenario made (also when the sequence failed), and the hosts are checked clean
for the tests that follow.
"""


import os
import re
import subprocess

import yaml

from conftest import BIN, REPO_ROOT, leftovers, token_of

SCENARIOS = os.path.join(REPO_ROOT, 'extensions', 'molecule')


def molecule(fleet, *args):
    """molecule against the bed's inventory; returns (exit code, plain output)."""
    env = dict(fleet.env(), TX9_FLEET_INVENTORY=fleet.inventory, NO_COLOR='1')
    proc = subprocess.run([os.path.join(BIN, 'molecule')] + list(args), cwd=REPO_ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=1800, check=False)
    return proc.returncode, proc.stdout


def scenario_box(scenario):
    """The box a scenario makes, as its molecule.yml names it for its playbooks."""
    with open(os.path.join(SCENARIOS, scenario, 'molecule.yml')) as handle:
        config = yaml.safe_load(handle)
    return config['provisioner']['inventory']['group_vars']['all']['tx9_molecule_box']


def executed(output, scenario):
    """The steps molecule reports as executed successfully, in order (a destroy held back by
    --destroy=never counts as one)."""
    return re.findall(r'^INFO\s+\[%s > (\w+)\] Executed: Successful$' % re.escape(scenario), output, re.MULTILINE)


def run_scenario(fleet, scenario):
    """`molecule test` of the scenario, then `molecule destroy`; returns the test's output and the
    tokens the scenario's box had on each host before the destroy."""
    box = scenario_box(scenario)
    try:
        code, output = molecule(fleet, 'test', '--scenario-name', scenario, '--destroy', 'never')
        assert code == 0, 'molecule test -s %s failed (%d):\n%s' % (scenario, code, output[-8000:])
        assert "Skipping, '--destroy=never' requested." in output
        tokens = dict((host.name, token_of(fleet, host, box)) for host in fleet.hosts)
    finally:
        code, gone = molecule(fleet, 'destroy', '--scenario-name', scenario)
    assert code == 0, 'molecule destroy -s %s failed (%d):\n%s' % (scenario, code, gone[-8000:])
    assert executed(gone, scenario) == ['destroy'], gone[-4000:]
    for host in fleet.hosts:
        assert leftovers(fleet, host, box) == [], host.name
    return output, tokens


def test_the_default_scenario_converges_the_host_and_box_roles_idempotently_verifies_the_box_and_destroys_it(bed):
    output, tokens = run_scenario(bed, 'default')

    assert executed(output, 'default') == ['converge', 'idempotence', 'verify', 'destroy']
    first = bed.hosts[0].name
    assert 'TASK [col_agents.tx9.tx9_host : ' in output and 'TASK [col_agents.tx9.tx9_box : ' in output
    assert 'TASK [Open the dashboard with the token]' in output
    # The box's token was minted on the first host, and molecule's output never carried it.
    assert len(tokens[first]) >= 16
    assert tokens[first] not in output
    assert not [name for name, token in tokens.items() if token and name != first]


def test_the_migrate_scenario_moves_a_box_to_the_host_the_inventory_places_it_on_idempotently(bed):
    source, dest = bed.hosts[:2]

    output, tokens = run_scenario(bed, 'tx9_migrate')

    assert executed(output, 'tx9_migrate') == ['prepare', 'converge', 'idempotence', 'verify', 'destroy']
    assert 'TASK [col_agents.tx9.tx9_migrate : Make the box of the stage' in output
    # The old copy kept its token (stopped, data kept); the new one got its own. Neither was printed.
    assert len(tokens[source.name]) >= 16 and len(tokens[dest.name]) >= 16
    assert tokens[source.name] != tokens[dest.name]
    assert tokens[source.name] not in output and tokens[dest.name] not in output


def test_the_upgrade_scenario_moves_a_box_on_an_older_image_to_the_collections_image_idempotently(bed):
    first = bed.hosts[0]

    output, tokens = run_scenario(bed, 'tx9_upgrade')

    assert executed(output, 'tx9_upgrade') == ['prepare', 'converge', 'idempotence', 'verify', 'destroy']
    assert 'TASK [col_agents.tx9.tx9_upgrade : ' in output
    # The upgraded box has its token, and no step printed it.
    assert len(tokens[first.name]) >= 16 and tokens[first.name] not in output
    code, images = bed.ssh(first, ['docker', 'image', 'ls', '-q', 'tx9-box:0.0.8-molecule'])
    assert code == 0 and images.strip() == '', images
