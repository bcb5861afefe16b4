# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which boxes move where: the plan of the migration role, from the inventory and what each host runs.

Private to the col_agents.tx9 collection; pure (no Ansible, no Docker).
A copy a move left behind carries a superseded mark (tx9_info's `superseded`):
the plan takes it for no copy, and a move back to its host replaces it.
Each host of the play reports the boxes it runs (tx9_info, by labels) and
the migration journals it holds (a host holds the journal of a box that is
leaving it). A host's `tx9_boxes` lists the boxes that belong on it. A box
found on one host and declared on another moves; a journal says a move was
interrupted, so the rerun redoes it from the backup (not arrived yet), makes
the box of what arrived on the destination (arrived: the old host is not
needed for that), or only finishes it (the destination passed).
"""

from __future__ import annotations

import posixpath
import re
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._box import superseded

# A host's report ({declared, boxes, journals}), a box's view from tx9_info, a planned move.
Report = dict[str, Any]
View = dict[str, Any]
Move = dict[str, Any]
# A journal as the plan holds it: (the host holding it, the journal, its path there).
Held = tuple[str, dict[str, Any], str]

# The box options an inventory entry may set; the same names tx9_box and tx9_import take.
BOX_OPTION_KEYS = (
    'image',
    'executor_web_base_url',
    'executor_publish',
    'executor_dns',
    'executor_allowed_hosts',
    'clear_executor_config',
    'agent_cpus',
    'agent_memory',
    'executor_cpus',
    'executor_memory',
    'agent_volume_budget',
    'executor_volume_budget',
    'egress',
    'wait_timeout',
)
# Keys of an inventory entry that are not box options: the box's tool pins (tx9_tools, see _plans/tools.py).
ENTRY_KEYS = ('name', 'tools')
PASSED = 'passed'
# The last archive (or change set) arrived on the destination whole, the old copy quiesced since it was written.
ARRIVED = 'arrived'
# How an arrived move's last archive or change set travelled; a full one names its archive and the archive's SHA-256.
ARRIVED_STRATEGIES = ('precopy', 'full')
SHA256 = re.compile(r'[0-9a-f]{64}')
# gather.yml reads no journal larger than this; a larger one stops the plan.
JOURNAL_READ_LIMIT = 64 * 1024


class PlanError(Exception):
    pass


def entry_of(entry: object, host: str) -> tuple[str, dict[str, Any]]:
    """(name, options) of one tx9_boxes entry: a name, or a dict with name and box options."""
    if isinstance(entry, str):
        entry = dict(name=entry)
    if not isinstance(entry, dict) or not isinstance(entry.get('name'), str) or not entry['name']:
        raise PlanError(f'{host}: each entry of tx9_boxes is a box name or a dict with a name, not {entry!r}')
    unknown = sorted(set(entry) - set(BOX_OPTION_KEYS) - set(ENTRY_KEYS))
    if unknown:
        raise PlanError(
            f'{host}: the tx9_boxes entry of {entry["name"]} has options no box takes: {", ".join(unknown)} '
            f'(known: {", ".join(ENTRY_KEYS + BOX_OPTION_KEYS)})'
        )
    return entry['name'], {k: v for k, v in entry.items() if k not in ENTRY_KEYS}


def placements(
    hosts: dict[str, Report], move_box: str | None = None, move_to: str | None = None
) -> dict[str, tuple[str, dict[str, Any]]]:
    """box -> (host, options): where the inventory (or the explicit move) puts each box."""
    placed: dict[str, tuple[str, dict[str, Any]]] = {}
    for host in sorted(hosts):
        for entry in hosts[host].get('declared') or []:
            name, options = entry_of(entry, host)
            if name in placed and placed[name][0] != host:
                raise PlanError(
                    f'box {name} is placed on two hosts, {placed[name][0]} and {host}; list it in the tx9_boxes of one'
                )
            placed[name] = (host, options)
    if move_box or move_to:
        if not (move_box and move_to):
            raise PlanError('tx9_move_box and tx9_move_to go together (the box, and the host it moves to)')
        if move_to not in hosts:
            raise PlanError(f'tx9_move_to={move_to} is not a host of this play ({", ".join(sorted(hosts))})')
        options = placed[move_box][1] if move_box in placed and placed[move_box][0] == move_to else {}
        placed = {move_box: (move_to, options)}
    return placed


def boxes_on(hosts: dict[str, Report]) -> dict[str, dict[str, View]]:
    """box -> {host: tx9_info's view of it}, from every host that answered."""
    found: dict[str, dict[str, View]] = {}
    for host, report in hosts.items():
        for box in report.get('boxes') or []:
            found.setdefault(box['name'], {})[host] = box
    return found


def journal_path(report: Report, box: object) -> str:
    """Where a host keeps the journal of box's move: <tx9_migrate_work_dir>/<box>/journal.json."""
    return f'{report.get("work_dir") or "<tx9_migrate_work_dir>"}/{box}/journal.json'


def journals_of(hosts: dict[str, Report]) -> dict[str, list[Held]]:
    """box -> [(host holding the journal, journal, its path there)]."""
    found: dict[str, list[Held]] = {}
    for host, report in hosts.items():
        for journal in report.get('journals') or []:
            box = journal.get('box')
            found.setdefault(box, []).append((host, journal, journal_path(report, box)))
    return found


def unread_journals(hosts: dict[str, Report]) -> list[tuple[str, str]]:
    """(box, why the plan stops) for each journal too large to read: a host's oversized_journals, {path: bytes}."""
    unread: list[tuple[str, str]] = []
    for host in sorted(hosts):
        for path, size in sorted((hosts[host].get('oversized_journals') or {}).items()):
            box = posixpath.basename(posixpath.dirname(path))
            unread.append(
                (
                    box,
                    f'box {box}: the journal {path} on {host} holds {size} bytes, more than the '
                    f'{JOURNAL_READ_LIMIT // 1024} KiB a journal is read up to (the moves write far smaller ones), '
                    f'so it was not read and no move was planned from it; find where the data of box {box} is, '
                    f'remove or replace that journal on {host}, then run again',
                )
            )
    return unread


def before_of(view: View) -> dict[str, Any]:
    """The source box as it was before the move: what a revert gives back."""
    gateway = view.get('gateway') or {}
    return dict(
        state=view.get('state'), quiesced=bool(view.get('quiesced')), gateway_enabled=bool(gateway.get('enabled'))
    )


def new_move(box: str, source: str, dest: str, view: View, options: dict[str, Any], phase: str = 'move') -> Move:
    carried = {k: v for k, v in (view.get('desired') or {}).items() if v is not None and k in BOX_OPTION_KEYS}
    carried.update({k: v for k, v in options.items() if v is not None})
    agent_volume = (view.get('volumes') or {}).get('agent') or {}
    return dict(
        box=box,
        source=source,
        dest=dest,
        phase=phase,
        resume=False,
        leftover=None,
        # The host whose stage (a pre-copied move's staged volume) an interrupted move to elsewhere left.
        stage_left=None,
        before=before_of(view),
        options=carried,
        image=carried.get('image'),
        payload_bytes=int(agent_volume.get('used_bytes') or 0),
        mounts_left_behind=[f'{m["source"]} -> {m["target"]}' for m in view.get('mounts') or []],
        replace_superseded=False,
    )


def journal_move(
    box: str,
    dest: str,
    options: dict[str, Any],
    found: dict[str, View],
    held: list[Held],
    silent: list[str] | None = None,
) -> Move:
    """The move an interrupted migration's journal asks for."""
    if len(held) > 1:
        holders = ', '.join(sorted(h for h, _j, _p in held))
        raise PlanError(f'box {box} has migration journals on {holders}; keep the one of the move in progress')
    source, journal, path = held[0]
    if journal.get('dest') in (silent or []):
        raise PlanError(
            f'box {box} was being moved from {source} to {journal.get("dest")}, and the Docker engine on '
            f'{journal.get("dest")} did not answer; start it, then run again to finish the move'
        )
    if journal.get('step') == PASSED:
        target = journal.get('dest')
        if target not in found:
            raise PlanError(
                f'box {box} passed its checks on {target} in an interrupted move, but {target} no longer has it; '
                f'remove the journal on {source} once you know where its data is'
            )
        move = new_move(box, source, target, found[target], {}, phase='finish')
        move['before'] = journal.get('before') or move['before']
        return move
    if journal.get('step') == ARRIVED:
        return arrived_move(box, dest, found, (source, journal, path))
    if source in (silent or []):
        raise PlanError(
            f'box {box} was being moved from {source} to {journal.get("dest")}, and the Docker engine on {source} '
            'did not answer; nothing of the move arrived yet, so it needs that engine: start it, then run again'
        )
    if source not in found:
        raise PlanError(
            f'box {box} was being moved from {source}, which no longer runs it; find its data (a copy may be on '
            f'{journal.get("dest")}), then remove the journal on {source}'
        )
    if dest == source:
        raise PlanError(
            f'box {box} is placed on {source} again while its move to {journal.get("dest")} is unfinished; place it on '
            f'{journal.get("dest")} and rerun to finish the move first'
        )
    refuse_unexplained(box, source, journal, found)
    move = new_move(box, source, dest, found[source], options)
    move.update(resume=True, before=journal.get('before') or move['before'])
    # What the interrupted move made on another host goes first; a superseded copy stays until the import replaces it.
    leftovers = sorted(h for h in found if h != source and not found[h].get('superseded'))
    move['leftover'] = leftovers[0] if leftovers else None
    move['stage_left'] = journal.get('dest') if journal.get('dest') not in (None, source, dest) else None
    move['replace_superseded'] = bool((found.get(dest) or {}).get('superseded'))
    return move


def refuse_unexplained(box: str, source: str, journal: dict[str, Any], found: dict[str, View]) -> None:
    """PlanError when a copy of box runs on a host that is neither end of its unfinished move."""
    others = sorted(h for h in found if h not in (source, journal.get('dest')))
    if others:
        raise PlanError(
            f'box {box} runs on {source} and on {", ".join(others)}, which its unfinished move from {source} '
            'does not explain'
        )


def arrival_of(box: str, held: Held) -> dict[str, Any]:
    """What an arrived journal says arrived; PlanError when it does not say it as a move can be finished from."""
    source, journal, path = held
    strategy = journal.get('strategy')
    problem = ''
    if strategy not in ARRIVED_STRATEGIES:
        problem = f'its strategy is {strategy!r}, not {" or ".join(ARRIVED_STRATEGIES)}'
    elif strategy == 'full' and not isinstance(journal.get('archive'), str):
        problem = 'it names no archive (a full move names the archive that arrived)'
    elif strategy == 'full' and not (isinstance(journal.get('sha256'), str) and SHA256.fullmatch(journal['sha256'])):
        problem = "its sha256 is not the archive's SHA-256 (64 lowercase hex digits)"
    if problem:
        raise PlanError(
            f'box {box}: the journal {path} on {source} says what its move to {journal.get("dest")} carried arrived, '
            f'but {problem}, so the box cannot be made of what arrived; find where the data of box {box} is (the old '
            f'copy on {source}, what arrived on {journal.get("dest")}), then remove the journal on {source} and run '
            'again'
        )
    return {k: journal.get(k) for k in ('strategy', 'archive', 'sha256', 'encrypted')}


def arrived_move(box: str, dest: str, found: dict[str, View], held: Held) -> Move:
    """The move whose last archive arrived on its destination: the box is made there of it, without the old host."""
    source, journal, _path = held
    arrival = arrival_of(box, held)
    target = journal.get('dest')
    if not isinstance(target, str) or dest != target:
        raise PlanError(
            f'box {box} is placed on {dest}, but its move from {source} to {target} is unfinished and what it '
            f'carried arrived on {target}; place it on {target} and run again to finish the move first'
        )
    refuse_unexplained(box, source, journal, found)
    here = found.get(target) or {}
    move = new_move(box, source, target, here, {}, phase=ARRIVED)
    move.update(
        resume=True,
        before=journal.get('before') or move['before'],
        options=journal.get('options') or {},
        replace_superseded=bool(journal.get('replace_superseded')),
        # The box was made here already (its promotion or import ran) when a whole copy not left behind is here;
        # one with objects missing (a promotion or import killed midway) is made again, which finishes it.
        made=bool(here) and not here.get('superseded') and here.get('state') != 'partial',
        arrival=arrival,
    )
    move['image'] = move['options'].get('image')
    return move


def plan(hosts: dict[str, Report], move_box: str | None = None, move_to: str | None = None) -> dict[str, list[Any]]:
    """{moves, errors, notes}. hosts: {host: {declared, boxes (None when it did not answer), journals}}, each
    with its work_dir (where its journals are) and oversized_journals ({path: bytes} of the journals not read)."""
    moves: list[Move] = []
    errors: list[str] = []
    notes: list[str] = []
    try:
        placed = placements(hosts, move_box, move_to)
    except PlanError as err:
        return dict(moves=[], errors=[str(err)], notes=[])
    located, journals = boxes_on(hosts), journals_of(hosts)
    silent = sorted(h for h, report in hosts.items() if report.get('boxes') is None)
    unread = unread_journals(hosts)
    errors += [why for _box, why in unread]
    for box in sorted(set(placed) - {b for b, _why in unread}):
        dest, options = placed[box]
        found = located.get(box, {})
        try:
            if box in journals:
                moves.append(journal_move(box, dest, options, found, journals[box], silent))
            else:
                move, said = placed_move(box, dest, options, found, silent)
                moves += [move] if move else []
                notes += said
        except PlanError as err:
            errors.append(str(err))
    return dict(moves=moves, errors=errors, notes=notes)


def placed_move(
    box: str, dest: str, options: dict[str, Any], found: dict[str, View], silent: list[str]
) -> tuple[Move | None, list[str]]:
    """(the move that puts box on dest, or None; what the plan says about it). A superseded copy is no copy."""
    current = sorted(h for h in found if not found[h].get('superseded'))
    left_behind = [
        f'box {box} on {h} is a copy {superseded.describe(found[h]["superseded"])}; it was left alone'
        for h in sorted(found)
        if h not in current and h != dest
    ]
    if len(current) > 1:
        raise PlanError(
            f'box {box} has copies on {" and ".join(current)} and none is marked superseded by a move, so which '
            f'one is the box is not clear and nothing moves; keep one: on the other host remove its copy '
            f'(col_agents.tx9.tx9_box state=absent) or mark it (tx9_box superseded: {{by: <the host you keep>}}), '
            'then run again'
        )
    if not current:
        if found:
            copies = '; '.join(f'on {h}, {superseded.describe(found[h]["superseded"])}' for h in sorted(found))
            raise PlanError(
                f'box {box} runs nowhere as the box: every copy is one a move left behind ({copies}); make the one to '
                'keep the box again (col_agents.tx9.tx9_box force: true on its host), then run again'
            )
        unanswered = f' that answered (no answer from {", ".join(silent)})' if silent else ''
        return None, [f'box {box} runs on no host of the play{unanswered}; nothing to move']
    source = current[0]
    if source == dest:
        return None, left_behind
    move = new_move(box, source, dest, found[source], options)
    move['replace_superseded'] = dest in found
    return move, left_behind
