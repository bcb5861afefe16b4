# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bringing a box to a state: present (running), stopped or absent.

Private to the col_agents.tx9 collection. Every flow validates its inputs,
takes the box lock, proves ownership of every existing object, plans, and
only then (outside check mode) changes anything. A box that runs has passed
the readiness gate (readiness.py).
"""

from __future__ import annotations

import os
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import (
    drill_record,
    egress,
    executor_config,
    host_mounts,
    limits,
    superseded,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.engine_loss import noting_returns, through_engine_loss
from ansible_collections.col_agents.tx9.plugins.module_utils._box.executor_config import parse_publish
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
from ansible_collections.col_agents.tx9.plugins.module_utils._box.readiness import ReadinessGate
from ansible_collections.col_agents.tx9.plugins.module_utils._box.run import BoxRun
from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._box.steps import (
    Step,
    describe,
    network_confined,
    recreates_agent,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.token import deliver_token, mint_token, prove_rotation
from ansible_collections.col_agents.tx9.plugins.module_utils._box.writer import BoxWriter
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import box_names_from_labels, find_image
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_VERSION,
    ROLE_AGENT,
    ROLE_EGRESS,
    ROLE_EXECUTOR,
    generate_name,
    validate_box_name,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._version import DEFAULT_IMAGE

TOKEN_KEY = 'EXECUTOR_MCP_TOKEN'
IMAGE_KEY = 'TX9_IMAGE'
# The dashboard's host port as the box first got it (when executor_publish names none).
PORT_KEY = 'TX9_DASHBOARD_PORT'
PORT_TAKEN = ('port is already allocated', 'address already in use')


def require_image(client: Any, image_ref: str) -> Any:
    """The image image_ref names on this host; IMAGE_MISSING when it is not there."""
    image = find_image(client, image_ref)
    if image is None:
        raise Tx9Error(
            f'The image {image_ref} is not on this host.',
            'IMAGE_MISSING',
            'Build it first with col_agents.tx9.tx9_image (or playbooks/build-image.yml).',
        )
    return image


def taken_names(client: Any, home: StateHome) -> set[str]:
    """Box names in use on this host: from daemon labels and from state files."""
    return set(box_names_from_labels(client)) | set(home.box_names())


class Reconciler(BoxRun):
    """One tx9_box run: plan the changes for a box, then apply them."""

    # What the run learns on its way; each run sets its own.
    port_moved: bool = False
    old_token: str | None = None
    rotating: bool = False
    mark_action: str | None = None
    ready_status: dict[str, Any] | None = None
    known_cpus: int = 0

    # ---- inputs ---------------------------------------------------------------------------

    def resolve_name(self) -> str:
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

    def host_cpus(self) -> int:
        if not self.known_cpus:  # asked at most once a run, unless the host did not say
            self.known_cpus = limits.host_cpu_count(self.client)
        return self.known_cpus

    # ---- the flows ------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        box = self.resolve_name()
        self.validate()
        # A box that is gone afterwards (removed, or a new one undone) keeps no lock file.
        returns: list[bool] = []
        with box_lock(self.client, self.home, box, discard_after=self.params['state'] == 'absent'):
            # An engine that dies mid-run and comes back: the run plans again from what it has and finishes.
            result = through_engine_loss(self.client, self.run_locked, on_return=lambda: returns.append(True))
        return noting_returns(result, len(returns))

    def validate(self) -> None:
        """Check every option before the lock is taken or anything is inspected."""
        asked = ['rotate_token'] if self.params.get('rotate_token') else []
        asked += ['quiesced'] if self.params.get('quiesced') is not None else []
        asked += ['force'] if self.params.get('force') else []
        if asked and self.params['state'] != 'present':
            raise Tx9Error(
                f'{asked[0]} needs state=present: it acts on the running box.',
                'INVALID_ARGUMENT',
                f'Set state=present (or leave it out) with {asked[0]}.',
            )
        if self.params.get('superseded') and self.params['state'] == 'absent':
            raise Tx9Error(
                'superseded marks a copy that stays: it does not go with state=absent.',
                'INVALID_ARGUMENT',
                'Set state=stopped (or present) with superseded, or leave superseded out to remove the copy.',
            )
        if self.params['state'] != 'absent':
            egress.parse(self.params.get('egress'))
            executor_config.resolve(self.params, {})
            limits.validate(self.params, self.host_cpus)

    def run_locked(self) -> dict[str, Any]:
        """The run, for a caller that already holds the box lock."""
        objects = BoxObjects(self.client, self.box)
        objects.check_ownership()
        if self.params['state'] == 'absent':
            return self.absent(objects)
        return self.present(objects, running=self.params['state'] == 'present')

    def desired(self, objects: BoxObjects, persisted: dict[str, str]) -> tuple[BoxSpec, dict[str, Any]]:
        """The box's spec and state file as this run wants them."""
        # Omitted, the box keeps the image it was given last; a new box gets the collection's.
        image_ref = self.params.get('image') or persisted.get(IMAGE_KEY) or DEFAULT_IMAGE
        image = require_image(self.client, image_ref)
        self.old_token, token, self.rotating = self.tokens(objects, persisted)
        executor_values = executor_config.resolve(self.params, persisted)
        live = objects.live_resources()
        resources = limits.resolve(self.params, persisted, self.host_cpus, live)
        mark = self.superseded_mark(objects, persisted)
        asked = self.params.get('egress')
        policy = egress.parse(asked) if asked is not None else egress.from_state(persisted, self.box)
        spec = BoxSpec(
            self.box,
            image_ref,
            image.id,
            (image.labels or {}).get(LABEL_VERSION),
            token,
            executor_values,
            resources,
            host_mounts.from_state(persisted, self.box),
            superseded_labels=superseded.to_labels(mark),
            egress_policy=policy,
        )
        spec.remembered_port = persisted.get(PORT_KEY)
        state = dict(persisted)
        state.update(executor_config.to_state(executor_values))
        state.update(limits.to_state(resources))
        state.update(superseded.to_state(mark))
        state.update(egress.to_state(policy))
        state.update({TOKEN_KEY: token, IMAGE_KEY: image_ref})
        return spec, without_empty(state)

    def superseded_mark(self, objects: BoxObjects, persisted: dict[str, str]) -> superseded.Mark | None:
        """The mark the box keeps after this run; BOX_SUPERSEDED when it would start a marked copy unforced."""
        current = superseded.read(persisted, objects.containers)
        asked = self.params.get('superseded')
        if current and not asked and self.params['state'] == 'present' and not self.params.get('force'):
            raise superseded.refusal(self.box, current)
        mark = superseded.wanted(asked, current, bool(self.params.get('force')))
        if current and not mark:
            self.mark_action = 'clear the superseded mark: this copy is the box again'
        elif mark and mark != current:
            self.mark_action = f'mark the copy {superseded.describe(mark)}'
        return mark

    def present(self, objects: BoxObjects, running: bool) -> dict[str, Any]:
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
        if self.mark_action:
            self.actions.insert(0, self.mark_action)
        rewired = False
        try:
            if not self.check_mode:
                self.apply(plan, writer, objects, spec, state)
            after_objects = self.objects_after(plan, objects)
            if running and not (self.check_mode and plan):
                rewired = self.wait_ready(after_objects, spec.token, waited=bool(plan))
            if self.rotating and not self.check_mode:
                address, port = probe_address(after_objects.publisher(), self.docker_host)
                prove_rotation(address, port, self.old_token or '', spec.token)
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

    def objects_after(self, plan: list[Step], objects: BoxObjects) -> BoxObjects:
        """The box after plan: read again, unless the plan changed nothing in the engine (or was only checked)."""
        if self.check_mode or all(kind == 'persist' for kind, _arg in plan):
            return objects
        return BoxObjects(self.client, self.box)

    def tokens(self, objects: BoxObjects, persisted: dict[str, str]) -> tuple[str | None, str, bool]:
        """(the box's token before this run, its token after, whether this run rotates it)."""
        old_token = persisted.get(TOKEN_KEY) or objects.token()
        rotate = bool(self.params.get('rotate_token')) and objects.exists()
        return old_token, mint_token() if rotate or not old_token else old_token, rotate

    def settle_quiesced(self, objects: BoxObjects) -> dict[str, Any]:
        """Make the running box quiesced as asked (hb down / hb up); what the agent reports after."""
        wanted = self.params.get('quiesced')
        agent = objects.containers[ROLE_AGENT]
        if not agent or not (agent.get('State') or {}).get('Running'):
            # Check mode before the box exists or runs: a new box starts resumed.
            if wanted:
                self.actions.append('quiesce the box (hb down)')
            return dict(guest_view(None), quiesced=wanted)
        words, view = converge_quiesced(self.client, agent['Id'], wanted, self.check_mode, self.ready_status)
        if words:
            self.actions.append(words)
        return view

    def plan(self, objects: BoxObjects, spec: BoxSpec, running: bool) -> list[Step]:
        steps: list[Step] = []
        containers = objects.all_containers()
        if objects.network is None:
            steps.append(('create_network', None))
        elif network_confined(objects.network) != spec.confined:
            # Docker cannot make a network internal in place: every container goes, and comes back on a new one.
            steps.append(('replace_network', None))
            containers = {role: None for role in containers}
        if spec.confined and objects.egress_network is None:
            steps.append(('create_egress_network', None))
        for role in ROLES:
            if objects.volumes[role] is None:
                steps.append(('create_volume', role))
        for stray in objects.strays:
            steps.append(('remove_stray', stray['Id']))
        if not spec.confined and objects.egress is not None and not any(s[0] == 'replace_network' for s in steps):
            steps.append(('remove_egress', None))
        if not spec.confined and objects.egress_network is not None:
            steps.append(('remove_egress_network', None))
        # The proxy, then Executor: the agent's readiness depends on both.
        for role in spec.roles:
            steps.extend(self.container_steps(role, containers.get(role), spec, running))
        # Containers are always created stopped; start the new ones in the box's start order.
        for role in spec.roles:
            if running and any(step == (kind, role) for step in steps for kind in ('create', 'recreate')):
                steps.append(('start', role))
        if not running:
            # Stop the agent first, the reverse of the start order.
            stops = [s for s in steps if s[0] == 'stop']
            order = list(reversed(spec.roles))
            steps = [s for s in steps if s[0] != 'stop'] + sorted(stops, key=lambda s: order.index(str(s[1])))
        return steps

    def container_steps(self, role: str, attrs: dict[str, Any] | None, spec: BoxSpec, running: bool) -> list[Step]:
        """What one container needs: create, recreate, or limits, start and stop on the one it has."""
        settings, config_hash = spec.container(role)
        if attrs is None:
            return [('create', role)]
        if (
            self.params.get('recreate')
            or attrs['Config']['Labels'].get(LABEL_CONFIG) != config_hash
            or attrs.get('Image') != spec.image_id
            or (
                running
                and container_state(attrs) != 'running'
                and configured_host_port(attrs) != (settings['ports'] or ['', ''])[1]
            )
        ):
            # (A stopped publisher created with another host port is recreated to get the box's port back.)
            return [('recreate', role)]
        steps: list[Step] = []
        if limits.limits_differ(attrs['HostConfig'], spec.limits(role)):
            steps.append(('update_limits', role))
        if running and container_state(attrs) != 'running':
            steps.append(('start', role))
        if not running and container_state(attrs) in ('running', 'restarting'):
            steps.append(('stop', role))
        return steps

    def apply(
        self, plan: list[Step], writer: BoxWriter, objects: BoxObjects, spec: BoxSpec, state: dict[str, Any]
    ) -> None:
        ids: dict[str, Any] = {role: (attrs or {}).get('Id') for role, attrs in objects.all_containers().items()}
        for kind, arg in plan:
            if arg is None:
                self.apply_box_step(kind, writer, objects, ids, state)
                continue
            if kind == 'create_volume':
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
            elif kind == 'start' and arg == spec.publisher and spec.remembered_port:
                ids[arg] = self.start_on_remembered_port(writer, ids[arg], spec)
            elif kind == 'start':
                writer.start(ids[arg])
            elif kind == 'stop':
                writer.stop(ids[arg])
            elif kind == 'deliver_token':
                deliver_token(self.client, ids[arg], spec.token)

    def apply_box_step(
        self, kind: str, writer: BoxWriter, objects: BoxObjects, ids: dict[str, Any], state: dict[str, Any]
    ) -> None:
        """One step on the box as a whole (its state file, its networks, its proxy)."""
        if kind == 'persist':
            self.home.write_box(self.box, state)
        elif kind == 'create_network':
            writer.create_network()
        elif kind == 'create_egress_network':
            writer.create_network('egress_network')
        elif kind == 'replace_network':
            for role in list(ids):
                if ids[role]:
                    writer.remove_container(ids[role])
                    ids[role] = None
            writer.remove_network(objects.names['network'])
            writer.create_network()
        elif kind == 'remove_egress':
            writer.remove_container(ids.pop(ROLE_EGRESS))
        elif kind == 'remove_egress_network':
            writer.remove_network(objects.names['egress_network'])
        # ('mint_token', None): desired() minted it

    def start_on_remembered_port(self, writer: BoxWriter, container_id: str, spec: BoxSpec) -> str:
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
        container_id = writer.create_container(spec.publisher)
        writer.start(container_id)
        self.actions.append(f'publish the dashboard on a new port: its port {taken} is taken on the host')
        self.port_moved = True
        return container_id

    def remember_port(self, objects: BoxObjects, spec: BoxSpec, state: dict[str, Any]) -> None:
        """Persist the dashboard's host port the first time the box gets one (and after a forced move)."""
        if parse_publish(spec.executor_values.get('executor_publish'))[1]:
            return
        port = published_binding(objects.publisher())[1]
        if port and state.get(PORT_KEY) != port and (not state.get(PORT_KEY) or self.port_moved):
            state[PORT_KEY] = port
            self.home.write_box(self.box, state)

    def wait_ready(self, objects: BoxObjects, token: str, waited: bool) -> bool:
        """The readiness gate for this run; what it did joins the actions. Whether it rewired the agent."""
        gate = ReadinessGate(
            self.client, self.box, self.docker_host, self.params.get('wait_timeout'), check_mode=self.check_mode
        )
        try:
            return gate.wait(objects, token, waited)
        finally:
            self.actions.extend(gate.actions)
            self.ready_status = gate.ready_status

    def absent(self, objects: BoxObjects) -> dict[str, Any]:
        keep_data = self.params.get('keep_data')
        before = self.desired_view(objects.state(), self.home.read_box(self.box), objects)
        plan: list[tuple[str, str, str]] = []
        containers = [objects.containers[role] for role in (ROLE_AGENT, ROLE_EXECUTOR)] + [objects.egress]
        for attrs in list(objects.strays) + containers:
            if attrs:
                plan.append(('container', attrs['Id'], container_name(attrs)))
        for kind, name, present in (
            ('network', objects.names['network'], objects.network),
            ('network', objects.names['egress_network'], objects.egress_network),
            ('volume', objects.names['executor_volume'], objects.volumes[ROLE_EXECUTOR]),
            ('volume', objects.names['agent_volume'], objects.volumes[ROLE_AGENT] and not keep_data),
        ):
            if present:
                plan.append((kind, name, name))
        has_state = os.path.exists(self.home.box_file(self.box))
        # The record of the last restore drill goes with the box's data: a new box of the name starts undrilled.
        has_drill = not keep_data and os.path.exists(drill_record.record_path(self.home, self.box))
        self.actions = [f'remove {kind} {name}' for kind, _ref, name in plan]
        if has_drill:
            self.actions.append('remove the drill record')
        if has_state:
            self.actions.append('remove the state file')
        if not self.check_mode:
            writer = BoxWriter(self.client, None)
            for kind, ref, _name in plan:
                writer.remove(kind, ref)
            if has_drill:
                drill_record.remove_drill(self.home, self.box)
            # The token goes last, once everything it unlocks is gone.
            if has_state:
                self.home.delete_box(self.box)
        after = dict(state='absent')
        box = dict(name=self.box, state='absent' if not keep_data or not objects.volumes[ROLE_AGENT] else 'partial')
        return dict(changed=bool(self.actions), actions=self.actions, box=box, diff=dict(before=before, after=after))

    # ---- reporting ------------------------------------------------------------------------

    def desired_view(self, state: str, persisted: dict[str, Any], objects: BoxObjects) -> dict[str, Any]:
        """The box's desired state as shown in diffs: never the token."""
        if state == 'absent':
            return dict(state='absent')
        executor_values = executor_config.resolve({}, persisted)
        view = dict(state=state, image=persisted.get(IMAGE_KEY) or objects.summary()['image'])
        view.update(executor_values)
        resources = limits.resolve({}, persisted, lambda: 0, objects.live_resources())
        view['resources'] = limits.diff_view(resources)
        mark = superseded.from_state(persisted)
        if mark:
            view['superseded'] = mark
        view['egress'] = egress.diff_view(egress.from_state(persisted, self.box))
        return view

    def result(
        self, objects: BoxObjects, spec: BoxSpec, changed: bool, before: dict[str, Any], after: dict[str, Any]
    ) -> dict[str, Any]:
        summary = objects.summary()
        if self.check_mode and changed:
            summary['state'] = after['state']
            summary['image'] = spec.image_ref
        summary['dashboard_url'] = dashboard_url(spec.executor_values, spec.url_host, objects.publisher())
        summary['resources'] = limits.human(spec.resources)
        summary['executor'] = dict(spec.executor_values.items())
        summary['superseded'] = superseded.from_labels(spec.superseded_labels)
        summary['egress'] = egress.summary(spec.egress)
        return dict(changed=changed, actions=self.actions, box=summary, diff=dict(before=before, after=after))


def without_empty(state: dict[str, Any]) -> dict[str, Any]:
    """A state file's values without the empty ones, which are left out rather than stored."""
    return {key: value for key, value in state.items() if value not in (None, '')}
