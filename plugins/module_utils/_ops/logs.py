# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_logs: a box's events from both volumes, merged, newest N; or a bundle of both volumes' logs.

Private to the col_agents.tx9 collection. The reading happens in the box
(`hb events`, assets/guest/tx9guest/events.py), once per volume and always
through a container that has that volume as its own /data: the agent
container for the agent volume (durable logs, Codex, Claude Code and Hermes
histories), the Executor container for the Executor volume, which is never
mounted into the agent. A stopped container's volume is read by a throwaway
read-only container instead. The host merges the two answers and replaces
the box token wherever it might still appear.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import egress
from ansible_collections.col_agents.tx9.plugins.module_utils._box.guest import last_json_line, run_hb, run_hb_offline
from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxObjects, container_state
from ansible_collections.col_agents.tx9.plugins.module_utils._docker import ENGINE_ERRORS, docker_error
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._names import ROLE_AGENT, ROLE_EXECUTOR, validate_box_name

if TYPE_CHECKING:
    from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome

TOKEN_KEY = 'EXECUTOR_MCP_TOKEN'
SOURCE_PATTERN = re.compile(r'^(agent|executor|egress|hermes|codex|claude|service-[a-z0-9][a-z0-9_-]{0,62})\Z')
LEVELS = ('debug', 'info', 'warning', 'error', 'critical')
MAX_LIMIT = 5000
RELATIVE = re.compile(r'^\s*([0-9]{1,7})\s*([smhdw])\s*\Z')
SECONDS = dict(s=1, m=60, h=3600, d=86400, w=604800)
REDACTED = '[REDACTED]'
EGRESS = 'egress'
# The egress proxy's decisions are read from the end of its output, at most this many lines.
EGRESS_TAIL = 20000
# Who reads each volume in its own container: the agent's files are the agent's, the Executor's logs root's.
READERS = {ROLE_AGENT: 'agent', ROLE_EXECUTOR: 'root'}


def invalid(message: str) -> Tx9Error:
    return Tx9Error(message, 'INVALID_ARGUMENT', 'Correct the option named above.')


def parse_since(value: str | None, now: datetime.datetime | None = None) -> str | None:
    """An ISO 8601 UTC text from 30m, 2h, 1d (s, m, h, d, w) or an ISO 8601 time; None for None."""
    if value is None or value == '':
        return None
    now = now or datetime.datetime.now(datetime.UTC)
    match = RELATIVE.match(value)
    if match:
        moment = now - datetime.timedelta(seconds=int(match.group(1)) * SECONDS[match.group(2)])
    else:
        text = value.strip()
        text = text[:-1] + '+00:00' if text.endswith(('Z', 'z')) else text
        try:
            moment = datetime.datetime.fromisoformat(text)
        except ValueError:
            raise invalid(
                f'since {value!r} is neither an age such as 30m, 2h or 1d nor an ISO 8601 time '
                'such as 2026-07-04T12:00:00Z.'
            )
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.UTC)
    moment = moment.astimezone(datetime.UTC)
    return moment.strftime('%Y-%m-%dT%H:%M:%S.') + f'{moment.microsecond // 1000:03d}Z'


def check_sources(sources: list[Any] | None) -> list[str] | None:
    """The sources asked for, each once, in order; None for all of them."""
    if not sources:
        return None
    wanted: list[str] = []
    for source in sources:
        if not isinstance(source, str) or not SOURCE_PATTERN.match(source):
            raise invalid(f'sources: {source!r} is not agent, executor, egress, hermes, codex, claude or service-NAME.')
        if source not in wanted:
            wanted.append(source)
    return wanted


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise invalid(f'limit must be from 1 to {MAX_LIMIT:d}, not {limit:d}.')
    return limit


def scrub(value: Any, secret: str | None) -> Any:
    """value with every occurrence of secret in its texts (keys included) replaced."""
    if not secret:
        return value
    if isinstance(value, str):
        return value.replace(secret, REDACTED)
    if isinstance(value, list):
        return [scrub(item, secret) for item in value]
    if isinstance(value, dict):
        return {scrub(key, secret): scrub(item, secret) for key, item in value.items()}
    return value


def merge(answers: list[dict[str, Any]], limit: int, secret: str | None = None) -> dict[str, Any]:
    """One result from each volume's `hb events` answer: the newest `limit` events, oldest first."""
    events: list[dict[str, Any]] = []
    skipped = 0
    partial: list[Any] = []
    for answer in answers:
        events.extend(e for e in answer.get('events') or [] if isinstance(e, dict) and isinstance(e.get('time'), str))
        skipped += int(answer.get('skipped') or 0)
        partial.extend(answer.get('partial') or [])
    events.sort(key=lambda e: e['time'])
    result: dict[str, Any] = scrub(dict(events=events[-limit:], skipped_count=skipped, partial=partial), secret)
    return result


def events_args(
    sources: list[str] | None, since: str | None, contains: str | None, level: str | None, limit: int
) -> list[str]:
    args = ['events', '--limit', str(limit)]
    for source in sources or []:
        args += ['--source', source]
    if since:
        args += ['--since', since]
    if contains:
        args += ['--contains', contains]
    if level:
        args += ['--level', level]
    return args


def existing_box(client: Any, name: str) -> BoxObjects:
    """The box's objects, proven by their labels; NO_BOX when it has none."""
    objects = BoxObjects(client, validate_box_name(name))
    objects.check_ownership()
    if not objects.exists():
        raise Tx9Error(
            f'There is no box named {name}.',
            'NO_BOX',
            'Check the name with col_agents.tx9.tx9_info, or create the box with col_agents.tx9.tx9_box.',
        )
    return objects


def box_secret(home: StateHome, objects: BoxObjects) -> str | None:
    """The box token, to be scrubbed from everything returned; None when neither side has it."""
    secret: str | None = home.read_box(objects.box).get(TOKEN_KEY) or objects.token()
    return secret


def hb_on_volume(client: Any, objects: BoxObjects, role: str, args: list[str]) -> tuple[int, str]:
    """(exit code, output) of hb args against role's volume: in its container, or a reader when it is stopped."""
    attrs = objects.container(role)
    answer: tuple[int, str]
    if container_state(attrs) == 'running':
        answer = run_hb(client, attrs['Id'], args, user=READERS[role])
    else:
        answer = run_hb_offline(
            client, objects.box, attrs['Image'], objects.names[f'{role}_volume'], args, READERS[role]
        )
    return answer


class LogQuery:
    """One tx9_logs query: validated options, then `hb events` on each volume that holds a wanted source."""

    def __init__(
        self, client: Any, home: StateHome, params: dict[str, Any], hide: Callable[[str], None] | None = None
    ) -> None:
        self.client = client
        self.home = home
        self.sources = check_sources(params.get('sources'))
        self.since = parse_since(params.get('since'))
        self.contains = params.get('contains') or None
        self.level = params.get('level')
        self.limit = check_limit(200 if params.get('limit') is None else params['limit'])
        self.name: str = params['name']
        self.hide = hide

    def plan(self) -> list[tuple[str, list[str] | None]]:
        """(role, sources) for each volume to ask; None means every source of that volume."""
        if self.sources is None:
            return [(ROLE_AGENT, None), (ROLE_EXECUTOR, [ROLE_EXECUTOR])]
        plan: list[tuple[str, list[str] | None]] = []
        agent_side = [s for s in self.sources if s not in (ROLE_EXECUTOR, EGRESS)]
        if agent_side:
            plan.append((ROLE_AGENT, agent_side))
        if ROLE_EXECUTOR in self.sources:
            plan.append((ROLE_EXECUTOR, [ROLE_EXECUTOR]))
        return plan

    def run(self) -> dict[str, Any]:
        objects = existing_box(self.client, self.name)
        secret = box_secret(self.home, objects)
        if secret and self.hide:
            self.hide(secret)
        answers = []
        for role, sources in self.plan():
            answers.append(self.ask(objects, role, sources))
        if (self.sources is None and objects.confined) or EGRESS in (self.sources or []):
            answers.append(egress_answer(self.client, objects, self.since, self.contains, self.level))
        result = merge(answers, self.limit, secret)
        result['changed'] = False
        return result

    def ask(self, objects: BoxObjects, role: str, sources: list[str] | None) -> dict[str, Any]:
        if objects.containers[role] is None:
            return dict(partial=[f'{role}: the {role} container is missing, so its volume was not read'])
        args = events_args(sources, self.since, self.contains, self.level, self.limit)
        code, output = hb_on_volume(self.client, objects, role, args)
        answer: dict[str, Any] | None = last_json_line(output) if code == 0 else None
        if answer is None:
            tail = ' '.join(output.strip().splitlines()[-3:])[-400:]
            raise Tx9Error(
                f'Reading the events of the {role} volume of box {objects.box} failed '
                f'(hb events exited {code}): {tail}',
                'GUEST_FAILED',
                'Run `hb doctor` in the box; a box older than this collection needs '
                'col_agents.tx9.tx9_box to move it onto the current image.',
            )
        if not sources:
            answer['events'] = [e for e in answer.get('events') or [] if e.get('source') != ROLE_EXECUTOR]
        return answer


def egress_event(decision: dict[str, Any]) -> dict[str, Any]:
    """One decision of the egress proxy as a tx9_logs event."""
    verdict = decision['decision']
    where = f'{decision["host"]}:{decision["port"]}' if decision['port'] else decision['host']
    return dict(
        decision,
        source=EGRESS,
        level='info' if verdict == 'allowed' else 'warning',
        message=f'{verdict} {decision["method"]} {where} (rule {decision["rule"] or "none"})',
        origin='egress-proxy',
    )


def egress_answer(
    client: Any, objects: BoxObjects, since: str | None, contains: str | None, level: str | None
) -> dict[str, Any]:
    """The egress proxy's decisions, from the end of its output, filtered as hb events filters."""
    attrs = objects.egress
    if attrs is None:
        why = 'the box has no egress proxy (it is open)' if not objects.confined else 'its container is missing'
        return dict(partial=[f'egress: {why}, so no decisions were read'])
    try:
        raw = client.api.logs(attrs['Id'], stdout=True, stderr=False, tail=EGRESS_TAIL)
    except ENGINE_ERRORS as exc:
        raise docker_error(f'read the output of {objects.names[EGRESS]}', exc)
    events, skipped = [], 0
    lines = raw.decode('utf-8', 'replace').splitlines()
    for line in lines:
        decision = egress.parse_decision(line)
        if decision is None:
            skipped += 1
            continue
        event = egress_event(decision)
        if since and event['time'] < since:
            continue
        if contains and contains.lower() not in event['message'].lower():
            continue
        if level and LEVELS.index(event['level']) < LEVELS.index(level):
            continue
        events.append(event)
    partial = [f'egress: only its last {EGRESS_TAIL} lines were read'] if len(lines) >= EGRESS_TAIL else []
    return dict(events=events, skipped=skipped, partial=partial)
