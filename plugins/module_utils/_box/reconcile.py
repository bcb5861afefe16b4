# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bringing a box to a state: present (running), stopped or absent.

Private to the col_agents.tx9 collection. Every flow validates its inputs,
takes the box lock, proves ownership of every existing object, plans, and
only then (outside check mode) changes anything.
"""

import os
import time

from ansible_collections.col_agents.tx9.plugins.module_utils._box import executor_config, host_mounts, limits
from ansible_collections.col_agents.tx9.plugins.module_utils._box.executor_config import parse_publish
from ansible_collections.col_agents.tx9.plugins.module_utils._box.guest import guest_status, run_hb
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import (
    LABEL_CONFIG,
    ROLES,
    BoxObjects,
    BoxSpec,
    configured_host_port,
    container_name,
    container_state,
    dashboard_url,
    probe_address,
    published_binding,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.quiesce import converge_quiesced, guest_view
from ansible_collections.col_agents.tx9.plugins.module_utils._box.token import deliver_token, mint_token, prove_rotation
from ansible_collections.col_agents.tx9.plugins.module_utils._box.writer import BoxWriter
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import box_names_from_labels, find_image
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._mcp import initialize
from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_VERSION,
    ROLE_AGENT,
    ROLE_EXECUTOR,
    generate_name,
    object_names,
    validate_box_name,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._version import DEFAULT_IMAGE

TOKEN_KEY = 'EXECUTOR_MCP_TOKEN'
# The quiesce marker's content when a backup quiesced the box.
BACKUP_QUIESCE = 'backup'
IMAGE_KEY = 'TX9_IMAGE'
# The dashboard's host port as the box first got it (when executor_publish names none).
PORT_KEY = 'TX9_DASHBOARD_PORT'
PORT_TAKEN = ('port is already allocated', 'address already in use')
# An Executor that exits this many times while the readiness gate waits will not start: the gate stops
# there instead of waiting out wait_timeout (Docker restarts it after 0.1, 0.2, 0.4 ... seconds).
EXECUTOR_EXIT_LIMIT = 3


def exits_verdict(executor, restarts_before):
    """The gate's words for an Executor that keeps exiting since the gate began, or None.

    None too while Docker has it running between two exits, when its last exit code is not known.
    """
    exits = (executor.get('RestartCount') or 0) - restarts_before
    if exits < EXECUTOR_EXIT_LIMIT:
        return None
    if container_state(executor) == 'running':
        # Docker clears the exit code as it starts the container again: the next look names it.
        return None
    state = executor['State']
    return 'Executor exited %d times while the gate waited (last exit code %s%s), so it will not start' % (
        exits,
        state.get('ExitCode'),
        ', killed for lack of memory' if state.get('OOMKilled') else '',
    )


def taken_names(client, home):
    """Box names in use on this host: from daemon labels and from state files."""
    return set(box_names_from_labels(client)) | set(home.box_names())


class Reconciler:
    """One tx9_box run: plan the changes for a box, then apply them."""

    def __init__(self, client, home, params, check_mode=False, docker_host=None):
        self.client = client
        self.home = home
        self.params = params
        self.check_mode = check_mode
        self.docker_host = docker_host
        self.actions = []
        self.box = params.get('name')
        self.port_moved = False
        self.old_token = None
        self.rotating = False

    # ---- inputs ---------------------------------------------------------------------------

    def resolve_name(self):
        if self.box:
            return validate_box_name(self.box)
        if self.params['state'] == 'absent':
            raise Tx9Error(
                'state=absent needs the name of the box to remove.',
                'INVALID_ARGUMENT',
                'Set name to the box to remove (col_agents.tx9.tx9_info lists them).',
            )
        self.box = generate_name(taken_names(self.client, self.home))
        return self.box

    def host_cpus(self):
        return limits.host_cpu_count(self.client)

    # ---- the flows ------------------------------------------------------------------------

    def run(self):
        box = self.resolve_name()
        self.validate()
        # A box that is gone afterwards (removed, or a new one undone) keeps no lock file.
        with box_lock(self.client, self.home, box, discard_after=self.params['state'] == 'absent'):
            return self.run_locked()

    def validate(self):
        """Check every option before the lock is taken or anything is inspected."""
        asked = ['rotate_token'] if self.params.get('rotate_token') else []
        asked += ['quiesced'] if self.params.get('quiesced') is not None else []
        if asked and self.params['state'] != 'present':
            raise Tx9Error(
                f'{asked[0]} needs state=present: it acts on the running box.',
                'INVALID_ARGUMENT',
                f'Set state=present (or leave it out) with {asked[0]}.',
            )
        if self.params['state'] != 'absent':
            executor_config.resolve(self.params, {})
            limits.resolve(self.params, {}, self.host_cpus())

    def run_locked(self):
        """The run, for a caller that already holds the box lock."""
        objects = BoxObjects(self.client, self.box)
        objects.check_ownership()
        if self.params['state'] == 'absent':
            return self.absent(objects)
        return self.present(objects, running=self.params['state'] == 'present')

    def desired(self, objects, persisted):
        """The box's spec and state file as this run wants them."""
        # Omitted, the box keeps the image it was given last; a new box gets the collection's.
        image_ref = self.params.get('image') or persisted.get(IMAGE_KEY) or DEFAULT_IMAGE
        image = find_image(self.client, image_ref)
        if image is None:
            raise Tx9Error(
                f'The image {image_ref} is not on this host.',
                'IMAGE_MISSING',
                'Build it first with col_agents.tx9.tx9_image (or playbooks/build-image.yml).',
            )
        self.old_token, token, self.rotating = self.tokens(objects, persisted)
        executor_values = executor_config.resolve(self.params, persisted)
        resources = limits.resolve(self.params, persisted, self.host_cpus(), objects.live_resources())
        spec = BoxSpec(
            self.box,
            image_ref,
            image.id,
            (image.labels or {}).get(LABEL_VERSION),
            token,
            executor_values,
            resources,
            host_mounts.from_state(persisted, self.box),
        )
        spec.remembered_port = persisted.get(PORT_KEY)
        state = dict(persisted)
        state.update(executor_config.to_state(executor_values))
        state.update(limits.to_state(resources))
        state.update({TOKEN_KEY: token, IMAGE_KEY: image_ref})
        return spec, without_empty(state)

    def present(self, objects, running):
        box = self.box
        persisted = self.home.read_box(box)
        spec, state = self.desired(objects, persisted)
        before = self.desired_view(objects.state(), persisted, objects)
        fresh = not objects.exists()
        writer = BoxWriter(self.client, spec)
        plan = self.plan(objects, spec, running)
        if self.rotating:
            plan.append(('deliver_token', ROLE_AGENT))
        if recreates_agent(plan):
            # A mount source that went away stops the run before any container is touched.
            host_mounts.preflight(spec.mounts, box)
        if state != persisted:
            plan.insert(0, ('persist', None))
        if self.rotating:
            plan.insert(0, ('mint_token', None))
        self.actions = [describe(step, box, objects.strays) for step in plan]
        rewired = False
        try:
            if not self.check_mode:
                self.apply(plan, writer, objects, spec, state)
            after_objects = objects if self.check_mode else BoxObjects(self.client, box)
            if running and not (self.check_mode and plan):
                rewired = self.readiness_gate(after_objects, spec.token, waited=bool(plan))
            if self.rotating and not self.check_mode:
                prove_rotation(
                    *(
                        probe_address(after_objects.containers[ROLE_EXECUTOR], self.docker_host)
                        + (self.old_token, spec.token)
                    )
                )
                self.actions.append('prove the old token is refused and the new one accepted')
        except BaseException:
            # A box that did not exist before this run is removed again: it never half-exists.
            if fresh and not self.check_mode:
                writer.undo()
                if not persisted:
                    self.home.delete_box(box)
            raise
        if rewired:
            self.actions.append('rewire MCP in the agent')
        if not self.check_mode:
            self.remember_port(after_objects, spec, state)
        guest = self.settle_quiesced(after_objects) if running else guest_view(None)
        after_state = ('running' if running else 'stopped') if self.check_mode and plan else after_objects.state()
        after = self.desired_view(after_state, state, after_objects)
        result = self.result(after_objects, spec, bool(self.actions), before, after)
        result['box'].update(guest)
        return result

    def tokens(self, objects, persisted):
        """(the box's token before this run, its token after, whether this run rotates it)."""
        old_token = persisted.get(TOKEN_KEY) or objects.token()
        rotate = bool(self.params.get('rotate_token')) and objects.exists()
        return old_token, mint_token() if rotate or not old_token else old_token, rotate

    def settle_quiesced(self, objects):
        """Make the running box quiesced as asked (hb down / hb up); what the agent reports after."""
        wanted = self.params.get('quiesced')
        agent = objects.containers[ROLE_AGENT]
        if not agent or not (agent.get('State') or {}).get('Running'):
            # Check mode before the box exists or runs: a new box starts resumed.
            if wanted:
                self.actions.append('quiesce the box (hb down)')
            return dict(guest_view(None), quiesced=wanted)
        words, view = converge_quiesced(self.client, agent['Id'], wanted, self.check_mode)
        if words:
            self.actions.append(words)
        return view

    def plan(self, objects, spec, running):
        steps = []
        if objects.network is None:
            steps.append(('create_network', None))
        for role in ROLES:
            if objects.volumes[role] is None:
                steps.append(('create_volume', role))
        for stray in objects.strays:
            steps.append(('remove_stray', stray['Id']))
        # Executor first: the agent's readiness depends on it.
        for role in (ROLE_EXECUTOR, ROLE_AGENT):
            attrs = objects.containers[role]
            _settings, config_hash = spec.container(role)
            if attrs is None:
                steps.append(('create', role))
            elif (
                self.params.get('recreate')
                or attrs['Config']['Labels'].get(LABEL_CONFIG) != config_hash
                or attrs.get('Image') != spec.image_id
                or (
                    running
                    and container_state(attrs) != 'running'
                    and configured_host_port(attrs) != (_settings['ports'] or ['', ''])[1]
                )
            ):
                # (A stopped Executor created with another host port is recreated to get the box's port back.)
                steps.append(('recreate', role))
            else:
                if limits.limits_differ(attrs['HostConfig'], spec.limits(role)):
                    steps.append(('update_limits', role))
                if running and container_state(attrs) != 'running':
                    steps.append(('start', role))
                if not running and container_state(attrs) in ('running', 'restarting'):
                    steps.append(('stop', role))
        # Containers are always created stopped; start the new ones in executor-then-agent order.
        for role in (ROLE_EXECUTOR, ROLE_AGENT):
            if running and any(step == (kind, role) for step in steps for kind in ('create', 'recreate')):
                steps.append(('start', role))
        if not running:
            # Stop the agent before Executor, the reverse of the start order.
            stops = [s for s in steps if s[0] == 'stop']
            steps = [s for s in steps if s[0] != 'stop'] + sorted(stops, key=lambda s: s[1] != ROLE_AGENT)
        return steps

    def apply(self, plan, writer, objects, spec, state):
        ids = dict((role, (objects.containers[role] or {}).get('Id')) for role in ROLES)
        for kind, arg in plan:
            if kind == 'persist':
                self.home.write_box(self.box, state)
            elif kind == 'create_network':
                writer.create_network()
            elif kind == 'create_volume':
                writer.create_volume(arg)
            elif kind == 'remove_stray':
                writer.remove_container(arg)
            elif kind == 'create':
                ids[arg] = writer.create_container(arg)
            elif kind == 'recreate':
                writer.remove_container(ids[arg])
                ids[arg] = writer.create_container(arg)
            elif kind == 'update_limits':
                writer.update_limits(ids[arg], arg)
            elif kind == 'start' and arg == ROLE_EXECUTOR and spec.remembered_port:
                ids[arg] = self.start_on_remembered_port(writer, ids[arg], spec)
            elif kind == 'start':
                writer.start(ids[arg])
            elif kind == 'stop':
                writer.stop(ids[arg])
            elif kind == 'deliver_token':
                deliver_token(self.client, ids[arg], spec.token)

    def start_on_remembered_port(self, writer, container_id, spec):
        """Start Executor on the box's port; when something else took it, on a new one (said in actions)."""
        try:
            writer.start(container_id)
            return container_id
        except Tx9Error as exc:
            if not any(words in exc.reason for words in PORT_TAKEN):
                raise
        taken = spec.remembered_port
        spec.remembered_port = None
        writer.remove_container(container_id)
        container_id = writer.create_container(ROLE_EXECUTOR)
        writer.start(container_id)
        self.actions.append(f'publish the dashboard on a new port: its port {taken} is taken on the host')
        self.port_moved = True
        return container_id

    def remember_port(self, objects, spec, state):
        """Persist the dashboard's host port the first time the box gets one (and after a forced move)."""
        if parse_publish(spec.executor_values.get('executor_publish'))[1]:
            return
        port = published_binding(objects.containers[ROLE_EXECUTOR])[1]
        if port and state.get(PORT_KEY) != port and (not state.get(PORT_KEY) or self.port_moved):
            state[PORT_KEY] = port
            self.home.write_box(self.box, state)

    def readiness_gate(self, objects, token, waited):
        """Wait until Executor answers an authenticated initialize and the agent is wired.

        Returns True when the agent's MCP wiring had to be refreshed.
        """
        timeout = self.params.get('wait_timeout') or 180
        deadline = time.time() + timeout
        self._rewired = False
        self._delivered = False
        agent_id = objects.containers[ROLE_AGENT]['Id']
        executor = objects.containers[ROLE_EXECUTOR]
        restarts = executor.get('RestartCount') or 0
        while True:
            address, port = probe_address(executor, self.docker_host)
            if not port:
                # Executor exited (or restarts) before Docker published its port.
                verdict = f'Executor publishes no port (its container is {container_state(executor)})'
            else:
                _status, problem = initialize(address, port, token, timeout=3)
                verdict = (f'Executor on {address}:{port}: {problem}') if problem else self.agent_step(agent_id, token)
            if verdict is None:
                return self._rewired
            if verdict == 'again':
                continue
            if verdict == 'check-mode':
                return True
            # Look at Executor again: its port, and whether it keeps exiting.
            executor = BoxObjects(self.client, self.box).containers[ROLE_EXECUTOR] or executor
            exited = exits_verdict(executor, restarts)
            if exited or time.time() >= deadline:
                raise Tx9Error(
                    'Box {} did not become ready{}: {}.'.format(
                        self.box, '' if exited else ' within %d seconds' % timeout, exited or verdict
                    ),
                    'NOT_READY',
                    f'Look at docker logs tx9-{self.box}-executor and tx9-{self.box}-agent, then run again (raise wait_timeout '
                    'on a slow host).',
                )
            time.sleep(1 if waited else 0.5)

    def agent_step(self, agent_id, token):
        """One look at the agent: None (ready), 'again', 'check-mode', or the problem in words."""
        status = guest_status(self.client, agent_id)
        if status.get('quiesced') and status.get('quiesced_by') == BACKUP_QUIESCE:
            # An interrupted backup left the box quiesced; no backup runs now (we hold the lock).
            if self.check_mode:
                return 'check-mode'
            code, output = run_hb(self.client, agent_id, ['up', '--if-by', BACKUP_QUIESCE])
            if code != 0:
                return f'hb up after an interrupted backup failed: {output.strip()[-300:]}'
            self.actions.append('resume the box after an interrupted backup')
            return 'again'
        if status.get('healthy'):
            return None
        executor = status.get('executor') or {}
        if not executor.get('mcp_ok') and '401' in (executor.get('detail') or '') and not self._delivered:
            # The agent holds an older token (a rotation was interrupted): give it the box's.
            if self.check_mode:
                return 'check-mode'
            deliver_token(self.client, agent_id, token)
            self._delivered = True
            self.actions.append('deliver the current token to the running agent')
            return 'again'
        if executor.get('mcp_ok') and not (status.get('wiring') or {}).get('current'):
            if self.check_mode:
                return 'check-mode'
            code, output = run_hb(self.client, agent_id, ['wire-once'])
            if code == 0:
                self._rewired = True
                return 'again'
            return f'hb wire-once failed: {output.strip()[-300:]}'
        return f'the agent reports: {_status_problem(status)}'

    def absent(self, objects):
        keep_data = self.params.get('keep_data')
        before = self.desired_view(objects.state(), self.home.read_box(self.box), objects)
        plan = []
        for attrs in list(objects.strays) + [objects.containers[role] for role in (ROLE_AGENT, ROLE_EXECUTOR)]:
            if attrs:
                plan.append(('container', attrs['Id'], container_name(attrs)))
        for kind, name, present in (
            ('network', objects.names['network'], objects.network),
            ('volume', objects.names['executor_volume'], objects.volumes[ROLE_EXECUTOR]),
            ('volume', objects.names['agent_volume'], objects.volumes[ROLE_AGENT] and not keep_data),
        ):
            if present:
                plan.append((kind, name, name))
        has_state = os.path.exists(self.home.box_file(self.box))
        self.actions = [f'remove {kind} {name}' for kind, _ref, name in plan]
        if has_state:
            self.actions.append('remove the state file')
        if not self.check_mode:
            writer = BoxWriter(self.client, None)
            for kind, ref, _name in plan:
                writer.remove(kind, ref)
            # The token goes last, once everything it unlocks is gone.
            if has_state:
                self.home.delete_box(self.box)
        after = dict(state='absent')
        box = dict(name=self.box, state='absent' if not keep_data or not objects.volumes[ROLE_AGENT] else 'partial')
        return dict(changed=bool(self.actions), actions=self.actions, box=box, diff=dict(before=before, after=after))

    # ---- reporting ------------------------------------------------------------------------

    def desired_view(self, state, persisted, objects):
        """The box's desired state as shown in diffs: never the token."""
        if state == 'absent':
            return dict(state='absent')
        executor_values = executor_config.resolve({}, persisted)
        view = dict(state=state, image=persisted.get(IMAGE_KEY) or objects.summary()['image'])
        view.update(executor_values)
        resources = limits.resolve({}, persisted, 0, objects.live_resources())
        view['resources'] = limits.diff_view(resources)
        return view

    def result(self, objects, spec, changed, before, after):
        summary = objects.summary()
        if self.check_mode and changed:
            summary['state'] = after['state']
            summary['image'] = spec.image_ref
        summary['dashboard_url'] = dashboard_url(spec.executor_values, spec.url_host, objects.containers[ROLE_EXECUTOR])
        summary['resources'] = limits.human(spec.resources)
        summary['executor'] = dict((k, v) for k, v in spec.executor_values.items())
        return dict(changed=changed, actions=self.actions, box=summary, diff=dict(before=before, after=after))


def without_empty(state):
    """A state file's values without the empty ones, which are left out rather than stored."""
    return dict((key, value) for key, value in state.items() if value not in (None, ''))


def recreates_agent(plan):
    """Whether a plan creates or recreates the agent container."""
    return ('create', ROLE_AGENT) in plan or ('recreate', ROLE_AGENT) in plan


def _status_problem(status):
    if status.get('detail'):
        return status['detail']
    executor = status.get('executor') or {}
    if not executor.get('mcp_ok'):
        return 'Executor is not reachable from the agent ({})'.format(executor.get('detail', 'no detail'))
    stale = (status.get('wiring') or {}).get('stale') or []
    if stale:
        return 'MCP wiring is stale for {}'.format(', '.join(stale))
    return 'unhealthy'


# Steps that act on one of the box's two containers, named by role in the plan.
CONTAINER_STEPS = ('create', 'recreate', 'start', 'stop')


def describe(step, box, strays=()):
    """A plan step in words; a container is named by its name, never its ID (strays: their listing entries)."""
    kind, arg = step
    words = {
        'persist': 'save the desired state',
        'mint_token': 'mint a new token',
        'deliver_token': 'deliver the new token to the running %s and rewire its tools',
        'create_network': 'create the network',
        'create_volume': 'create the %s volume',
        'remove_stray': 'remove a stray container %s',
        'create': 'create the %s container %s',
        'recreate': 'recreate the %s container %s',
        'update_limits': 'update the %s limits live',
        'start': 'start the %s container %s',
        'stop': 'stop the %s container %s',
    }[kind]
    if kind in CONTAINER_STEPS:
        return words % (arg, object_names(box)[arg])
    if kind == 'remove_stray':
        return words % container_name(next((c for c in strays if c.get('Id') == arg), dict(Id=arg)))
    return words % arg if '%s' in words else words
