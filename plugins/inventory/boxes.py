# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)


DOCUMENTATION = r"""
---
name: boxes
short_description: The tx9 boxes of a fleet, one inventory host per box
version_added: 0.1.0
description:
  - Lists the boxes on every host of an inventory group (O(host_group)) and on Docker engines named by URL
    (O(docker_hosts)), and adds one inventory host per box, named C(<box>@<Docker host>).
  - Each host of O(host_group) is listed by running M(col_agents.tx9.tx9_info) B(on that host), in one
    C(ansible) run over all of them, through the same connection a play uses (its C(ansible_*)
    variables for address, user, key, port, SSH arguments, become, interpreter, connection plugin). The
    listing therefore sees that host's own engine and its own state home, which is where the last
    backup of each box is recorded.
  - Each box host gets the C(ansible_*) variables of its Docker host (C(ansible_host) defaults to the Docker
    host's inventory name; templates in them are rendered as for the Docker host), so a task of
    M(col_agents.tx9.tx9_box) with C(name={{ tx9_box_name }}) against a box host runs on the machine the box
    lives on.
  - Boxes listed through O(docker_hosts) are listed from the controller with the Docker SDK; their box hosts
    use the local connection with the interpreter that runs Ansible, and carry the URL as
    C(tx9_docker_host) for the modules' O(col_agents.tx9.tx9_box#module:docker_host) option.
  - 'Variables of each box host: C(tx9_box_name), C(tx9_host) (its Docker host), C(tx9_state), C(tx9_image),
    C(tx9_version), C(tx9_drift), C(tx9_dashboard_url) (never with the token), C(tx9_last_backup) (time, path,
    sha256, verified, or null), C(tx9_backup_stale), C(tx9_superseded) (the mark of a copy a move left behind, or
    null), C(tx9_tools) (the tool pins the inventory gives the box), C(tx9_tools_drift) (its tools that do not
    answer as pinned), and C(tx9_box_info), the whole tx9_info record (which holds no token).'
  - 'Groups: C(tx9_boxes) (every box), C(tx9_<state>) (C(tx9_running), C(tx9_stopped), C(tx9_crashed),
    C(tx9_partial)), C(tx9_drift) (created with another collection version), C(tx9_host_<Docker host>) (anything
    but letters, digits and C(_) becomes C(_)), and C(tx9_backup_stale) (no verified backup newer than
    O(backup_max_age)).'
  - 'C(tx9_tools_drift) holds the running boxes whose tools do not answer as pinned. A box is pinned by its Docker
    host''s C(tx9_tools) (tool to version), then, tool by tool, by the C(tools) of its entry in that host''s
    C(tx9_boxes); a box the inventory pins to nothing is judged by its own pin (the last
    M(col_agents.tx9.tx9_tools) install, which an import leaves without its files). A pinned tool answers when
    the box''s install reports that version (any, for V(latest)). C(playbooks/tools.yml -e
    tx9_hosts=tx9_tools_drift) installs them.'
  - 'A copy a move left behind (marked superseded, see M(col_agents.tx9.tx9_box)) is in C(tx9_superseded)
    instead: only there, in C(tx9_boxes) and its host group, never in a state group, C(tx9_drift),
    C(tx9_tools_drift) or C(tx9_backup_stale), so no play over those takes it for the box.'
  - This source must come after the source that defines O(host_group) (C(-i hosts.yml -i tx9.boxes.yml); in an
    inventory directory, files are read in alphabetical order).
  - A host that cannot be listed (unreachable, no engine) is left out with a warning; the other hosts are listed.
  - The configuration file's name must end in C(tx9.yml), C(tx9.yaml), C(boxes.yml) or C(boxes.yaml).
author:
  - col_agents.tx9 contributors (@col-agents)
requirements:
  - On each host of O(host_group), what M(col_agents.tx9.tx9_info) needs (Docker SDK for Python).
  - With O(docker_hosts), the Docker SDK for Python on the controller.
extends_documentation_fragment:
  - constructed
  - inventory_cache
options:
  plugin:
    description: Marks this file as a configuration of this plugin.
    required: true
    type: str
    choices: [col_agents.tx9.boxes]
  host_group:
    description:
      - The inventory group whose hosts are listed, each over its own connection. Hosts of its child groups
        are included.
      - The group must already be in the inventory when this source is read.
    type: str
  docker_hosts:
    description:
      - Docker engine URLs listed from the controller, such as C(unix:///var/run/docker.sock),
        C(ssh://root@192.0.2.10) or C(tcp://192.0.2.10:2376).
      - The Docker host of such a box is named after the URL's host (C(localhost) for C(unix://)), with
        C(_<port>) when the URL has a port.
      - Their last backups are read from O(state_home) on the controller, where M(col_agents.tx9.tx9_backup)
        records them when it runs on the controller against the same URL.
    type: list
    elements: str
    default: []
  state_home:
    description:
      - The controller's state home for boxes listed through O(docker_hosts); when omitted, E(TX9_HOME), else
        C(~/.tx9).
    type: path
  backup_max_age:
    description:
      - A box without a verified backup this recent is in the group C(tx9_backup_stale).
      - Seconds, or a duration such as C(24h), C(90m), C(7d) or C(1d12h).
      - Backup times are written by each Docker host's clock and compared with the controller's.
    type: str
    default: 24h
  use_vars_plugins:
    description:
      - Read the Docker hosts' variables from vars plugins too (C(group_vars/) and C(host_vars/) next to the
        inventory sources), where connection variables often live.
    type: bool
    default: true
  listing_timeout:
    description:
      - Seconds the listing of all hosts of O(host_group) may take together; hosts not listed by then are
        left out with a warning.
    type: int
    default: 600
notes:
  - The C(ansible) run that lists O(host_group) uses the controller's Ansible configuration and collection
    paths, and the C(-u), C(--private-key), C(-T) and C(-f) options of the command that reads the inventory.
    Its inventory is a private temporary file (mode C(0600), removed afterwards) holding each host's
    connection variables, decrypted vault values included, with every string marked C(!unsafe).
  - Passwords asked for on the command line (C(-k), C(-K)) are not passed on; give them as (vaulted)
    variables, or use keys.
  - With caching on, the listings are cached; C(tx9_backup_stale) is judged again at every read.
seealso:
  - module: col_agents.tx9.tx9_info
  - module: col_agents.tx9.tx9_backup
"""

EXAMPLES = r"""
# tx9.boxes.yml, read after the inventory that defines the group "fleet":
#   ansible-inventory -i hosts.yml -i tx9.boxes.yml --graph
plugin: col_agents.tx9.boxes
host_group: fleet
backup_max_age: 12h
keyed_groups:
  - key: tx9_version
    prefix: tx9_version
groups:
  tx9_big: tx9_box_info.volumes.agent.used_bytes | default(0, true) > 10737418240
compose:
  dashboard: tx9_dashboard_url

# The engine of the controller and one reached over SSH by the Docker SDK:
# plugin: col_agents.tx9.boxes
# docker_hosts:
#   - unix:///var/run/docker.sock
#   - ssh://root@192.0.2.10
"""

import os
import sys
import time
from typing import Any

import ansible
from ansible.errors import AnsibleError, AnsibleParserError
from ansible.inventory.helpers import get_group_vars
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.utils.collection_loader import AnsibleCollectionConfig
from ansible.utils.display import Display
from ansible.utils.vars import combine_vars
from ansible.vars.plugins import get_vars_from_inventory_sources

from ansible_collections.col_agents.tx9.plugins.module_utils._docker import is_engine_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.plugin_utils._inventory import boxes as plan
from ansible_collections.col_agents.tx9.plugins.plugin_utils._inventory.remote import list_on_hosts

display = Display()
NAME_ENDINGS = ('tx9.yml', 'tx9.yaml', 'boxes.yml', 'boxes.yaml')
# Options of the command reading the inventory that the listing's ansible run repeats.
# A Docker host as a source of boxes: (its docker_host URL, or None for an inventory host; connection variables).
Source = tuple[str | None, dict[str, Any]]
Listings = dict[str, list[dict[str, Any]]]
FORWARDED_CLI = (('remote_user', '-u'), ('private_key_file', '--private-key'), ('timeout', '-T'), ('forks', '-f'))


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = 'col_agents.tx9.boxes'

    def __init__(self) -> None:
        super().__init__()
        # Each inventory host's tx9_tools and tx9_boxes, read with its connection variables.
        self.pins: dict[str, plan.HostPins] = {}

    def verify_file(self, path: str) -> bool:
        return bool(super().verify_file(path)) and path.endswith(NAME_ENDINGS)

    def parse(self, inventory: Any, loader: Any, path: str, cache: bool = True) -> None:
        super().parse(inventory, loader, path, cache)
        self._read_config_data(path)
        try:
            max_age = plan.parse_max_age(self.get_option('backup_max_age'))
            sources = self.sources()
        except ValueError as exc:
            raise AnsibleParserError(f'{path}: {exc}') from exc
        listings = self.cached_listings(path, cache, sources)
        try:
            self.populate({name: boxes for name, boxes in listings.items() if name in sources}, sources, max_age)
        except ValueError as exc:
            raise AnsibleParserError(f'{path}: {exc}') from exc

    def sources(self) -> dict[str, Source]:
        """{Docker host name: (docker_host URL or None, its box hosts' connection variables)}; each inventory
        host's tool pins in self.pins."""
        found: dict[str, Source] = {}
        self.pins.clear()
        group_name = self.get_option('host_group')
        if group_name:
            group = self.inventory.groups.get(group_name)
            if group is None:
                raise ValueError(
                    f'host_group {group_name} is not in the inventory; list the source that defines it before '
                    'this one (-i hosts.yml -i tx9.boxes.yml)'
                )
            for host in group.get_hosts():
                if 'tx9_box_name' not in host.get_vars():
                    variables, self.pins[host.name] = self.connection(host)
                    found[host.name] = (None, variables)
        for url in self.get_option('docker_hosts') or []:
            name, variables = plan.url_source(url, sys.executable)
            if name in found:
                raise ValueError(f'docker_hosts entry {url} names the Docker host {name}, which is already listed')
            found[name] = (url, variables)
        return found

    def connection(self, host: Any) -> tuple[dict[str, Any], plan.HostPins]:
        """The host's ansible_* variables, and its tx9_tools and tx9_boxes, templates rendered as for the host."""
        # Hosts join "all" when the whole inventory has been read, after this source.
        groups = host.get_groups()
        if self.inventory.groups['all'] not in groups:
            groups = [self.inventory.groups['all']] + groups
        variables = combine_vars(get_group_vars(groups), host.get_vars())
        if self.get_option('use_vars_plugins'):
            sources = getattr(self.inventory, 'processed_sources', [])
            variables = combine_vars(
                variables, get_vars_from_inventory_sources(self.loader, sources, groups + [host], 'all')
            )
        found = plan.connection_vars(host.name, variables)
        self.templar.available_variables = combine_vars(
            variables,
            dict(
                inventory_hostname=host.name,
                inventory_hostname_short=host.name.split('.')[0],
                group_names=sorted(g.name for g in groups if g.name not in ('all', 'ungrouped')),
            ),
        )
        for name, value in found.items():
            if isinstance(value, str) and self.templar.is_template(value):
                try:
                    found[name] = self.templar.template(value)
                except AnsibleError as exc:  # a template that needs facts or play vars stays as it is
                    display.warning(f'{name} of {host.name} is left as a template: {exc}')
        return found, self.pins_of(host.name, variables)

    def pins_of(self, name: str, variables: dict[str, Any]) -> plan.HostPins:
        """The host's tx9_tools and tx9_boxes, templates rendered (the templar holds the host's variables)."""
        pins = []
        for value in (variables.get('tx9_tools'), variables.get('tx9_boxes')):
            if isinstance(value, str) and self.templar.is_template(value):
                try:
                    value = self.templar.template(value)
                except AnsibleError as exc:
                    display.warning(f'The tool pins of {name} are left out: {exc}')
                    value = None
            pins.append(value)
        return pins[0], pins[1]

    def cached_listings(self, path: str, cache: bool, sources: dict[str, Source]) -> Listings:
        """{Docker host name: [tx9_info record]}, from the cache when it may be used."""
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option('cache') and cache
        update = self.get_option('cache') and not cache
        listings: Listings | None = None
        if use_cache:
            try:
                listings = self._cache[cache_key]
            except KeyError:
                update = True
            if listings is not None and set(sources) - set(listings):
                # A Docker host the cached listing does not know: list them all again.
                listings, update = None, True
        if listings is None:
            listings, errors = self.fetch(sources)
            for name in sorted(errors):
                display.warning(f'The boxes on {name} are not in the inventory: {errors[name]}')
            # A partial listing is not cached: the next read tries the missing hosts again.
            update = update and not errors
        if update:
            self._cache[cache_key] = listings
        return listings

    def fetch(self, sources: dict[str, Source]) -> tuple[Listings, dict[str, str]]:
        hosts = {name: variables for name, (url, variables) in sources.items() if url is None}
        listings, errors = list_on_hosts(
            hosts, sys.executable, collection_paths(), forwarded_cli(), self.get_option('listing_timeout')
        )
        for name, (url, _variables) in sources.items():
            if url is not None:
                try:
                    listings[name] = self.list_url(url)
                except Tx9Error as exc:  # one engine that does not answer does not stop the others
                    errors[name] = exc.reason
                except Exception as exc:
                    if not is_engine_error(exc):
                        raise
                    errors[name] = str(exc)
        return listings, errors

    def list_url(self, url: str) -> list[dict[str, Any]]:
        """tx9_info's records for the engine at url, read from the controller."""
        from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
        from ansible_collections.col_agents.tx9.plugins.module_utils._docker import (
            DOCKER_IMPORT_ERROR,
            HAS_DOCKER,
            connect,
            connection_from_params,
        )
        from ansible_collections.col_agents.tx9.plugins.module_utils._ops.info import list_boxes

        if not HAS_DOCKER:
            raise AnsibleParserError(
                'docker_hosts needs the Docker SDK for Python on the controller '
                f'(pip install docker): {DOCKER_IMPORT_ERROR}'
            )
        boxes: list[dict[str, Any]] = list_boxes(
            connect(connection_from_params(dict(docker_host=url))), StateHome(self.get_option('state_home'))
        )
        return boxes

    def populate(self, listings: Listings, sources: dict[str, Source], max_age: int) -> None:
        strict = self.get_option('strict')
        for name, groups, variables in plan.populate_plan(listings, max_age, time.time(), self.pins):
            self.inventory.add_host(name)
            for group in groups:
                self.inventory.add_group(group)
                self.inventory.add_child(group, name)
            variables = combine_vars(sources[variables['tx9_host']][1], variables)
            for key, value in variables.items():
                self.inventory.set_variable(name, key, value)
            self._set_composite_vars(self.get_option('compose'), variables, name, strict)
            self._add_host_to_composed_groups(self.get_option('groups'), variables, name, strict)
            self._add_host_to_keyed_groups(self.get_option('keyed_groups'), variables, name, strict)


def collection_paths() -> list[str]:
    """Where this Ansible finds collections (its own internal one left out), for the listing's ansible run."""
    own = os.path.dirname(os.path.abspath(ansible.__file__)) + os.sep
    return [path for path in AnsibleCollectionConfig.collection_paths if not os.path.abspath(path).startswith(own)]


def forwarded_cli() -> list[str]:
    """The -u, --private-key, -T and -f options of the command reading the inventory, when it has them."""
    from ansible import context

    args = []
    for key, flag in FORWARDED_CLI:
        value = context.CLIARGS.get(key)
        if value:
            args.extend([flag, str(value)])
    return args
