# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_mount: one host mount of a box made present or absent.

Private to the col_agents.tx9 collection. The new mount set is applied by
recreating only the agent container, on the image it runs now (never a tag
that has moved on), with the box's token, limits and running state; Executor
is not touched. Every source is checked before the agent is removed, and the
set is saved in the state file once the new agent exists.
"""

from __future__ import annotations

from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import (
    engine_loss,
    executor_config,
    host_mounts,
    limits,
    superseded,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import (
    LABEL_CONFIG,
    BoxObjects,
    BoxSpec,
    container_state,
    env_value,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.readiness import ReadinessGate
from ansible_collections.col_agents.tx9.plugins.module_utils._box.reconcile import (
    IMAGE_KEY,
    TOKEN_KEY,
    without_empty,
)
from ansible_collections.col_agents.tx9.plugins.module_utils._box.run import BoxRun
from ansible_collections.col_agents.tx9.plugins.module_utils._box.steps import Step, describe
from ansible_collections.col_agents.tx9.plugins.module_utils._box.writer import BoxWriter
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import find_image
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_VERSION,
    ROLE_AGENT,
    ROLE_EXECUTOR,
    validate_box_name,
)

LIVE = ('running', 'restarting')
# One host mount as host_mounts makes, checks and stores it (a dict: source, target, read_only, ...).
HostMount = Any


def is_live(attrs: dict[str, Any] | None) -> bool:
    """Whether an inspected container exists and runs (or is restarting)."""
    return attrs is not None and container_state(attrs) in LIVE


class MountRun(BoxRun):
    """One tx9_mount run: plan the new mount set, check the sources, recreate the agent, save.

    A running agent it recreates passes the readiness gate (readiness.py) before the run returns.
    """

    def run(self) -> dict[str, Any]:
        validate_box_name(self.box)
        wanted = self.requested()
        returns: list[bool] = []
        with box_lock(self.client, self.home, self.box):
            # An engine that dies mid-run and comes back: the run plans again from what it has and finishes.
            result = engine_loss.through_engine_loss(
                self.client, lambda: self.inspect_and_change(wanted), on_return=lambda: returns.append(True)
            )
        return engine_loss.noting_returns(result, len(returns))

    def inspect_and_change(self, wanted: HostMount) -> dict[str, Any]:
        objects = BoxObjects(self.client, self.box)
        objects.check_ownership()
        return self.change(objects, wanted)

    def requested(self) -> HostMount:
        """The mount as asked for, every option checked before anything is inspected."""
        target = host_mounts.normalize_target(self.params.get('target'))
        source = self.params.get('source')
        if self.params.get('state') == 'absent':
            return dict(target=target, source=host_mounts.normalize_source(source) if source else None)
        if not source:
            raise Tx9Error(
                f'state=present needs source, the host directory to mount at {target}.',
                'INVALID_ARGUMENT',
                'Set source to a host directory, such as /srv/share.',
            )
        return host_mounts.new_mount(
            host_mounts.normalize_source(source),
            target,
            self.params.get('read_only'),
            self.params.get('require_mountpoint'),
        )

    def new_set(self, current: list[HostMount], wanted: HostMount) -> list[HostMount]:
        if self.params.get('state') == 'absent':
            return host_mounts.without_mount(current, wanted['target'], wanted['source'])
        info = host_mounts.check_source(wanted)
        wanted['gid'] = info.st_gid
        return host_mounts.with_mount(current, wanted)

    def change(self, objects: BoxObjects, wanted: HostMount) -> dict[str, Any]:
        if not objects.exists():
            if self.params.get('state') == 'absent':
                return dict(
                    changed=False,
                    actions=[],
                    mount=None,
                    mounts=[],
                    box=dict(name=self.box, state='absent'),
                    diff=dict(before=dict(mounts=[]), after=dict(mounts=[])),
                )
            raise Tx9Error(
                f'Box {self.box} does not exist.',
                'NO_BOX',
                'Create it first with col_agents.tx9.tx9_box (col_agents.tx9.tx9_info lists the boxes).',
            )
        persisted = self.home.read_box(self.box)
        current = host_mounts.from_state(persisted, self.box)
        mounts = self.new_set(current, wanted)
        agent = objects.containers[ROLE_AGENT]
        executor = objects.containers[ROLE_EXECUTOR]
        # A box whose agent a run lost part way (removed, not yet made again) gets it back on Executor's image.
        model = agent or executor
        spec = self.agent_spec(model, objects, persisted, mounts) if model else None
        plan = self.agent_plan(agent, spec, executor)
        if plan:
            # Every source, not only the new one, before the agent is removed.
            host_mounts.preflight(mounts, self.box)
        state = dict(persisted)
        state.update(host_mounts.to_state(mounts))
        if spec is not None:
            state.setdefault(TOKEN_KEY, spec.token)
        state = without_empty(state)
        if state != persisted:
            plan.append(('persist', None))  # saved once the new agent exists
        self.actions = [describe(step, self.box) for step in plan]
        if not self.check_mode and plan:
            self.apply(plan, objects, spec, state)
            objects = BoxObjects(self.client, self.box)
            if spec is not None and ('start', ROLE_AGENT) in plan and is_live(objects.containers[ROLE_EXECUTOR]):
                self.wait_ready(objects, spec.token)
        return self.mount_result(objects, wanted, current, mounts)

    def agent_spec(
        self, agent: dict[str, Any], objects: BoxObjects, persisted: dict[str, str], mounts: list[HostMount]
    ) -> BoxSpec:
        """The agent (its inspected attrs) as it runs now (image, version, token, limits), with the new mount set.

        Without an agent, agent is Executor's inspect: the box's image and version are its.
        """
        image_ref = env_value(agent, IMAGE_KEY) or persisted.get(IMAGE_KEY) or agent['Config'].get('Image')
        image = find_image(self.client, image_ref)
        # The agent stays on the image it runs, even when its tag now names another one.
        create_from = image_ref if image is not None and image.id == agent['Image'] else agent['Image']
        token = objects.token() or persisted.get(TOKEN_KEY)
        if not token:
            raise Tx9Error(
                f'The token of box {self.box} is in neither the state home nor its containers.',
                'TOKEN_MISSING',
                'Recreate the box with col_agents.tx9.tx9_box, or import it again.',
            )
        resources = limits.resolve({}, persisted, lambda: limits.host_cpu_count(self.client), objects.live_resources())
        return BoxSpec(
            self.box,
            image_ref,
            agent['Image'],
            (agent['Config'].get('Labels') or {}).get(LABEL_VERSION),
            token,
            executor_config.resolve({}, persisted),
            resources,
            mounts,
            create_from,
            superseded_labels=superseded.to_labels(superseded.read(persisted, objects.containers)),
        )

    def apply(self, plan: list[Step], objects: BoxObjects, spec: BoxSpec | None, state: dict[str, Any]) -> None:
        """The agent recreated with the new mount set (and started again when it ran), then the set saved."""
        writer = BoxWriter(self.client, spec)
        agent_id: str = (objects.containers[ROLE_AGENT] or {}).get('Id', '')
        for kind, _role in plan:
            if kind == 'recreate':
                writer.remove_container(agent_id)
                agent_id = writer.create_container(ROLE_AGENT)
            elif kind == 'create':
                agent_id = writer.create_container(ROLE_AGENT)
            elif kind == 'start':
                writer.start(agent_id)
            elif kind == 'persist':
                self.home.write_box(self.box, state)

    def wait_ready(self, objects: BoxObjects, token: str) -> None:
        """The readiness gate for the recreated agent; what it did joins the actions."""
        gate = ReadinessGate(
            self.client, self.box, self.docker_host, self.params.get('wait_timeout'), check_mode=self.check_mode
        )
        try:
            gate.wait(objects, token, waited=True)
        finally:
            self.actions.extend(gate.actions)

    @staticmethod
    def agent_plan(
        agent: dict[str, Any] | None, spec: BoxSpec | None, executor: dict[str, Any] | None = None
    ) -> list[Step]:
        """Recreate the agent when its config differs; start it again when it ran.

        A missing agent is created, and started when Executor runs; so is one a lost run created but never started.
        """
        if spec is None:
            return []
        if agent is None:
            made: list[Step] = [('create', ROLE_AGENT)]
            return made + ([('start', ROLE_AGENT)] if is_live(executor) else [])
        if (agent['Config'].get('Labels') or {}).get(LABEL_CONFIG) == spec.container(ROLE_AGENT)[1]:
            # An agent a lost run created and never started, on a box whose Executor runs, is started.
            never_started = (agent.get('State') or {}).get('Status') == 'created'
            return [('start', ROLE_AGENT)] if never_started and is_live(executor) else []
        steps: list[Step] = [('recreate', ROLE_AGENT)]
        if is_live(agent):
            steps.append(('start', ROLE_AGENT))
        return steps

    def mount_result(
        self, objects: BoxObjects, wanted: HostMount, current: list[HostMount], mounts: list[HostMount]
    ) -> dict[str, Any]:
        mount = None
        if self.params.get('state') != 'absent':
            mount = host_mounts.view(wanted)
        views = [host_mounts.view(m) for m in mounts]
        return dict(
            changed=bool(self.actions),
            actions=self.actions,
            mount=mount,
            mounts=views,
            box=objects.summary(),
            diff=dict(before=dict(mounts=[host_mounts.view(m) for m in current]), after=dict(mounts=views)),
        )
