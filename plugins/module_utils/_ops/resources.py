# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_resources: a box's limits changed live, and its volumes measured against the budgets.

Private to the col_agents.tx9 collection. The same parser, state file keys
and live update as tx9_box's limit options (limits.py): limits change in
place with `docker update`, so both containers keep their ids, and persist
in the state file, so every later recreate applies them again. When an
update or the save fails, the containers already updated get their old
limits back. Budgets are advisory: measured, reported, never enforced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import ROLES, BoxObjects
from ansible_collections.col_agents.tx9.plugins.module_utils._box.reconcile import without_empty
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._lock import box_lock
from ansible_collections.col_agents.tx9.plugins.module_utils._names import ROLE_AGENT, ROLE_EXECUTOR, validate_box_name
from ansible_collections.col_agents.tx9.plugins.module_utils._ops.info import live_limits, volume_report, volume_usage

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome

OPTIONS = tuple(option for option, _key, _kind in limits.RESOURCE_OPTIONS)


def current_resources(objects: BoxObjects, persisted: dict[str, str], host_cpus: int) -> dict[str, Any]:
    """The box's resources as they are: the containers' live limits, the saved budgets."""
    current: dict[str, Any] = limits.resolve({}, persisted, lambda: host_cpus)
    current.update((option, value) for option, value in objects.live_resources().items() if value is not None)
    return current


def wanted_resources(
    params: dict[str, Any], current: dict[str, Any], persisted: dict[str, str], host_cpus: int
) -> dict[str, Any]:
    """What the run asks for: the defaults on reset, else the given options over the saved state."""
    if params.get('reset'):
        wanted: dict[str, Any] = limits.defaults(host_cpus)
        return wanted
    wanted = limits.resolve(params, persisted, lambda: host_cpus, current)
    return wanted


def old_limits(attrs: dict[str, Any]) -> dict[str, int]:
    """The limits a container has now, to put back when a later step fails."""
    host = attrs['HostConfig']
    return dict(
        NanoCpus=host.get('NanoCpus') or 0, Memory=host.get('Memory') or 0, MemorySwap=host.get('MemorySwap') or 0
    )


class ResourcesRun:
    """One tx9_resources run: validate, lock, plan, update live, save, read back."""

    def __init__(self, client: Any, home: StateHome, params: dict[str, Any], check_mode: bool = False) -> None:
        self.client = client
        self.home = home
        self.params = params
        self.check_mode = check_mode
        self.box: str = params.get('name') or ''
        self.actions: list[str] = []

    def given(self) -> dict[str, Any]:
        return {option: self.params[option] for option in OPTIONS if self.params.get(option) is not None}

    def run(self) -> dict[str, Any]:
        validate_box_name(self.params.get('name'))
        given = self.given()
        if self.params.get('reset') and given:
            raise Tx9Error(
                f'reset cannot be combined with {", ".join(sorted(given))}.',
                'INVALID_ARGUMENT',
                'Run reset on its own, then set the values you want in a second task.',
            )
        host_cpus: int = limits.host_cpu_count(self.client)
        limits.validate(given, lambda: host_cpus)  # every value checked before the lock is taken
        with box_lock(self.client, self.home, self.box):
            objects = BoxObjects(self.client, self.box)
            objects.check_ownership()
            self.require_containers(objects)
            return self.change(objects, host_cpus, changing=bool(given) or bool(self.params.get('reset')))

    def require_containers(self, objects: BoxObjects) -> None:
        missing = [role for role in ROLES if objects.containers[role] is None]
        if not objects.exists():
            raise Tx9Error(
                f'Box {self.box} does not exist.',
                'NO_BOX',
                'Create it first with col_agents.tx9.tx9_box (col_agents.tx9.tx9_info lists the boxes).',
            )
        if missing:
            raise Tx9Error(
                f'Box {self.box} has no {" or ".join(missing)} container, and limits apply to both.',
                'NO_BOX',
                f'Repair the box with col_agents.tx9.tx9_box name={self.box}, then run this again.',
            )

    def change(self, objects: BoxObjects, host_cpus: int, changing: bool) -> dict[str, Any]:
        persisted: dict[str, str] = self.home.read_box(self.box)
        current = current_resources(objects, persisted, host_cpus)
        wanted = wanted_resources(self.params, current, persisted, host_cpus) if changing else current
        roles: list[str] = []
        state = persisted
        if changing:
            roles = [
                role
                for role in (ROLE_EXECUTOR, ROLE_AGENT)
                if limits.limits_differ(objects.container(role)['HostConfig'], limits.container_limits(wanted, role))
            ]
            state = dict(persisted)
            state.update(limits.to_state(wanted))
            state = without_empty(state)
        self.actions = [f'update the {role} limits live' for role in roles]
        if state != persisted:
            self.actions.append('save the desired state')
        if not self.check_mode and self.actions:
            self.apply(objects, roles, wanted, state if state != persisted else None)
            objects = BoxObjects(self.client, self.box)
        return self.report(objects, current, wanted)

    def apply(
        self, objects: BoxObjects, roles: list[str], wanted: dict[str, Any], state: dict[str, str] | None
    ) -> None:
        """Update each role live, then save; on a failure, the updated roles get their old limits back."""
        done: list[str] = []
        try:
            for role in roles:
                limits.update_live(
                    self.client,
                    objects.container(role)['Id'],
                    limits.container_limits(wanted, role),
                    objects.names[role],
                )
                done.append(role)
            if state is not None:
                self.home.write_box(self.box, state)
        except BaseException:
            for role in reversed(done):
                try:
                    limits.update_live(
                        self.client,
                        objects.container(role)['Id'],
                        old_limits(objects.container(role)),
                        objects.names[role],
                    )
                except Tx9Error:
                    pass  # the first failure is the one to report
            raise

    def report(self, objects: BoxObjects, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        budgets = {role: after[f'{role}_volume_budget'] for role in ROLES}
        return dict(
            changed=bool(self.actions),
            actions=self.actions,
            limits=live_limits(objects),
            resources=limits.human(after),
            volumes=volume_report(objects, budgets, volume_usage(self.client)),
            diff=dict(before=limits.diff_view(before), after=limits.diff_view(after)),
        )
