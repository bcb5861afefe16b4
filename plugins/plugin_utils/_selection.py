# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which boxes a play means: names, shell-style patterns, or a list mixing them.

Private to the col_agents.tx9 collection; pure (no Ansible, no Docker). The rule:

- An entry with one of the characters ``*``, ``?`` or ``[`` is a shell-style
  pattern (fnmatch, case-sensitive) matched against the names of the boxes on
  the host; any other entry is a box name, taken as written (box names never
  hold those characters, so nothing is both).
- Entries come as a list or as one string separated by commas (``_shapes.names``).
- No entries at all means every box of the host. On a box host of the
  col_agents.tx9.boxes inventory plugin (its ``tx9_box_name``), only that box is
  a candidate: the inventory group the play targets chooses the boxes, and the
  entries, when given, narrow them down.
- An entry that finds no box on any host of the play is never a green no-op:
  ``verdict`` names it under the cause NO_MATCHING_BOX.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

from ansible_collections.col_agents.tx9.plugins.plugin_utils import _shapes

CAUSE = 'NO_MATCHING_BOX'
PATTERN_CHARACTERS = frozenset('*?[')


def is_pattern(entry: str) -> bool:
    """Whether an entry is a shell-style pattern rather than a box name."""
    return any(character in PATTERN_CHARACTERS for character in entry)


def matches(entry: str, name: str) -> bool:
    """Whether the box name is the entry, or matches it as a pattern."""
    return fnmatch.fnmatchcase(name, entry) if is_pattern(entry) else name == entry


def box_names(boxes: Iterable[Any] | None) -> list[str]:
    """Box names from tx9_info's records (dicts with a name) or from names."""
    found: list[str] = []
    for box in boxes or []:
        name = box.get('name') if isinstance(box, dict) else box
        if isinstance(name, str) and name:
            found.append(name)
    return found


def select(
    boxes: Iterable[Any] | None,
    wanted: Any,
    variable: str,
    only: str | None = None,
    as_given: bool = False,
) -> list[str]:
    """The boxes of the host the entries choose, sorted, each once.

    boxes: the host's boxes; wanted: the entries (list or comma string; none means every box);
    only: the one candidate on a box host of the inventory plugin; as_given: a name is chosen even when
    the host does not have it (a delete that was already done is repeatable).
    """
    entries = _shapes.names(wanted, variable)
    candidates = set(box_names(boxes))
    if only:
        candidates &= {only}
    if not entries:
        return sorted(candidates)
    chosen = {name for name in candidates if any(matches(entry, name) for entry in entries)}
    if as_given:
        chosen |= {entry for entry in entries if not is_pattern(entry) and (not only or entry == only)}
    return sorted(chosen)


def unmatched(wanted: Any, variable: str, chosen: Iterable[str]) -> list[str]:
    """The entries, in the order given, that no chosen box answers to."""
    names = set(chosen)
    return [entry for entry in _shapes.names(wanted, variable) if not any(matches(entry, name) for name in names)]


def confirmation(names: Iterable[str]) -> str:
    """The text a typed confirmation repeats: the box names, sorted, joined by commas."""
    return ','.join(sorted(set(names)))


def note(entry: str, where: str) -> str:
    """One line saying that an entry found no box at a place."""
    if is_pattern(entry):
        return f'{entry}: skipped, no box on {where} matches it'
    return f'{entry}: skipped, not on {where}'


def verdict(selections: Iterable[Any] | None, wanted: Any, variable: str, where: str = 'any host') -> dict[str, Any]:
    """The play's selection judged as a whole.

    selections: each host's chosen names (None for a host that chose nothing yet, such as one that
    failed before); where: the place named in the notes and the message. Returns ok (every entry found
    a box), unmatched (the entries that found none), notes (a line per unmatched entry), names (every
    chosen name, sorted), confirmation (those joined by commas), cause and msg (empty when ok).
    """
    names: set[str] = set()
    for chosen in selections or []:
        names.update(box_names(chosen))
    missing = unmatched(wanted, variable, names)
    result: dict[str, Any] = dict(
        ok=not missing,
        unmatched=missing,
        notes=[note(entry, where) for entry in missing],
        names=sorted(names),
        confirmation=confirmation(names),
        cause='',
        msg='',
    )
    if missing:
        result['cause'] = CAUSE
        result['msg'] = (
            f'{CAUSE}: {variable} asked for {", ".join(missing)}, and no box on {where} '
            f'{"answers to it" if len(missing) == 1 else "answers to those"}'
            f'{" (the boxes chosen: " + ", ".join(sorted(names)) + ")" if names else ""}. '
            f'Fix: check the names and patterns against the boxes tx9_info lists (playbooks/list.yml); a pattern '
            f'is shell-style, such as nu-* or dev-?, and matches whole names.'
        )
    return result
