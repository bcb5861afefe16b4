# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which boxes move where: the plan of the migration role, from the inventory and what each host runs.

Private to the col_agents.tx9 collection; pure (no Ansible, no Docker).
Each host of the play reports the boxes it runs (tx9_info, by labels) and
the migration journals it holds (a host holds the journal of a box that is
leaving it). A host's `tx9_boxes` lists the boxes that belong on it. A box
found on one host and declared on another moves; a journal says a move was
interrupted, so the rerun redoes it from the backup (not passed yet) or only
finishes it (the destination passed).
"""

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
    'wait_timeout',
)
PASSED = 'passed'


class PlanError(Exception):
    pass


def entry_of(entry, host):
    """(name, options) of one tx9_boxes entry: a name, or a dict with name and box options."""
    if isinstance(entry, str):
        entry = dict(name=entry)
    if not isinstance(entry, dict) or not isinstance(entry.get('name'), str) or not entry['name']:
        raise PlanError(f'{host}: each entry of tx9_boxes is a box name or a dict with a name, not {entry!r}')
    unknown = sorted(set(entry) - set(BOX_OPTION_KEYS) - set(['name']))
    if unknown:
        raise PlanError(
            '{}: the tx9_boxes entry of {} has options no box takes: {} (known: name, {})'.format(
                host, entry['name'], ', '.join(unknown), ', '.join(BOX_OPTION_KEYS)
            )
        )
    return entry['name'], dict((k, v) for k, v in entry.items() if k != 'name')


def placements(hosts, move_box=None, move_to=None):
    """box -> (host, options): where the inventory (or the explicit move) puts each box."""
    placed = {}
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
            raise PlanError('tx9_move_to={} is not a host of this play ({})'.format(move_to, ', '.join(sorted(hosts))))
        options = placed[move_box][1] if move_box in placed and placed[move_box][0] == move_to else {}
        placed = {move_box: (move_to, options)}
    return placed


def boxes_on(hosts):
    """box -> {host: tx9_info's view of it}, from every host that answered."""
    found = {}
    for host, report in hosts.items():
        for box in report.get('boxes') or []:
            found.setdefault(box['name'], {})[host] = box
    return found


def journals_of(hosts):
    """box -> [(host holding the journal, journal)]."""
    found = {}
    for host, report in hosts.items():
        for journal in report.get('journals') or []:
            found.setdefault(journal.get('box'), []).append((host, journal))
    return found


def before_of(view):
    """The source box as it was before the move: what a revert gives back."""
    gateway = view.get('gateway') or {}
    return dict(
        state=view.get('state'), quiesced=bool(view.get('quiesced')), gateway_enabled=bool(gateway.get('enabled'))
    )


def new_move(box, source, dest, view, options, phase='move'):
    carried = dict((k, v) for k, v in (view.get('desired') or {}).items() if v is not None and k in BOX_OPTION_KEYS)
    carried.update(dict((k, v) for k, v in options.items() if v is not None))
    agent_volume = (view.get('volumes') or {}).get('agent') or {}
    return dict(
        box=box,
        source=source,
        dest=dest,
        phase=phase,
        resume=False,
        leftover=None,
        before=before_of(view),
        options=carried,
        image=carried.get('image'),
        payload_bytes=int(agent_volume.get('used_bytes') or 0),
        mounts_left_behind=['{} -> {}'.format(m['source'], m['target']) for m in view.get('mounts') or []],
    )


def journal_move(box, dest, options, found, held):
    """The move an interrupted migration's journal asks for."""
    if len(held) > 1:
        raise PlanError(
            'box {} has migration journals on {}; keep the one of the move in progress'.format(
                box, ', '.join(sorted(h for h, _j in held))
            )
        )
    source, journal = held[0]
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
    if source not in found:
        raise PlanError(
            'box {} was being moved from {}, which no longer runs it; find its data (a copy may be on {}), '
            'then remove the journal on {}'.format(box, source, journal.get('dest'), source)
        )
    if dest == source:
        raise PlanError(
            'box {} is placed on {} again while its move to {} is unfinished; place it on {} and rerun '
            'to finish the move first'.format(box, source, journal.get('dest'), journal.get('dest'))
        )
    others = sorted(h for h in found if h not in (source, journal.get('dest')))
    if others:
        raise PlanError(
            'box {} runs on {} and on {}, which its unfinished move from {} does not explain'.format(
                box, source, ', '.join(others), source
            )
        )
    move = new_move(box, source, dest, found[source], options)
    move.update(resume=True, before=journal.get('before') or move['before'])
    leftovers = sorted(h for h in found if h != source)
    move['leftover'] = leftovers[0] if leftovers else None
    return move


def plan(hosts, move_box=None, move_to=None):
    """{moves, errors, notes}. hosts: {host: {declared, boxes (None when it did not answer), journals}}."""
    moves, errors, notes = [], [], []
    try:
        placed = placements(hosts, move_box, move_to)
    except PlanError as err:
        return dict(moves=[], errors=[str(err)], notes=[])
    located, journals = boxes_on(hosts), journals_of(hosts)
    silent = sorted(h for h, report in hosts.items() if report.get('boxes') is None)
    for box in sorted(placed):
        dest, options = placed[box]
        found = located.get(box, {})
        try:
            if box in journals:
                moves.append(journal_move(box, dest, options, found, journals[box]))
            elif dest in found:
                notes += [f'box {box} also exists on {h}; it was left alone' for h in sorted(found) if h != dest]
            elif not found:
                notes.append(
                    'box {} runs on no host of the play{}; nothing to move'.format(
                        box, ' that answered (no answer from {})'.format(', '.join(silent)) if silent else ''
                    )
                )
            elif len(found) > 1:
                raise PlanError(
                    'box {} runs on {}; which copy moves to {} is not clear, so none does'.format(
                        box, ', '.join(sorted(found)), dest
                    )
                )
            else:
                source = list(found)[0]
                moves.append(new_move(box, source, dest, found[source], options))
        except PlanError as err:
            errors.append(str(err))
    return dict(moves=moves, errors=errors, notes=notes)
