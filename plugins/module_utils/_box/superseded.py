# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mark of a copy a move left behind: superseded by the copy on another host.

Private to the col_agents.tx9 collection. A mark is {by, at, move}: the host
the current copy runs on, when this copy was marked (UTC, ISO 8601) and which
move (`<old host> -> <new host>`). It is kept in the box's state file (its
desired state) and on both of its containers' labels (what every reader
without the state home sees), and it is read from the state file first. A
superseded copy is never started by tx9_box without `force`, which makes it
the box again (the mark goes).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

Mark = dict[str, str]

FIELDS = ('by', 'at', 'move')
LABELS = {field: f'tx9.superseded-{field}' for field in FIELDS}
STATE_KEYS = {field: f'TX9_SUPERSEDED_{field.upper()}' for field in FIELDS}


def now() -> str:
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


def _read(values: Mapping[str, Any], keys: Mapping[str, str]) -> Mark | None:
    if not values.get(keys['by']):
        return None
    return {field: str(values.get(keys[field]) or '') for field in FIELDS}


def from_state(persisted: Mapping[str, Any]) -> Mark | None:
    return _read(persisted, STATE_KEYS)


def from_labels(labels: Mapping[str, Any] | None) -> Mark | None:
    return _read(labels or {}, LABELS)


def read(persisted: Mapping[str, Any], containers: Mapping[str, Mapping[str, Any] | None]) -> Mark | None:
    """The copy's mark: the state file's, else the first container's labels that carry one."""
    mark = from_state(persisted)
    for attrs in containers.values():
        if mark is None and attrs:
            mark = from_labels((attrs.get('Config') or {}).get('Labels'))
    return mark


def to_state(mark: Mark | None) -> dict[str, str]:
    """The state file's keys for mark; all empty (left out of the file) when there is none."""
    return {STATE_KEYS[field]: (mark or {}).get(field, '') for field in FIELDS}


def to_labels(mark: Mark | None) -> dict[str, str]:
    """The containers' labels for mark; none when there is none."""
    return {LABELS[field]: mark[field] for field in FIELDS if mark and mark.get(field)}


# What a mark's words may be: printable, one line, bounded (they go into labels, a state file line and messages).
MAX_WORDS = 255


def checked_words(value: object, option: str) -> str:
    """value as a mark's words; INVALID_ARGUMENT when it is empty, too long or not one printable line."""
    text = str(value)
    if option == 'superseded.by' and not text.strip() or len(text) > MAX_WORDS or not text.isprintable():
        raise Tx9Error(
            f'{option} must be one printable line of at most {MAX_WORDS} characters'
            + (' and not empty' if option == 'superseded.by' else '')
            + f', not {text[:60]!r}.',
            'INVALID_ARGUMENT',
            f'Set {option} to the host name the current copy runs on (by) or a short name of the move (move).',
        )
    return text


def wanted(asked: Mapping[str, Any] | None, current: Mark | None, force: bool, clock: Any = now) -> Mark | None:
    """The mark a tx9_box run leaves: asked (keeping when it was first set), none when forced, else as it is."""
    if asked:
        by = checked_words(asked['by'], 'superseded.by')
        move = checked_words(asked.get('move') or '', 'superseded.move')
        if current and current['by'] == by and current['move'] == move:
            return current
        return dict(by=by, at=clock(), move=move)
    return None if force else current


def describe(mark: Mark) -> str:
    """'superseded by its copy on h2 (move h1 -> h2, 2026-12-03T15:00:00Z)'."""
    details = ', '.join(part for part in (f'move {mark["move"]}' if mark['move'] else '', mark['at']) if part)
    return f'superseded by its copy on {mark["by"]}' + (f' ({details})' if details else '')


def refusal(box: str, mark: Mark, refused: str = 'it is not started') -> Tx9Error:
    """BOX_SUPERSEDED: the copy on this host is not the box; where the current one runs."""
    return Tx9Error(
        f'Box {box} on this host is a copy a move left behind, {describe(mark)}: its data is older than '
        f'the box on {mark["by"]}, so {refused}.',
        'BOX_SUPERSEDED',
        f'Use the box on {mark["by"]}. To make this copy the box again (its data as it was when it was left '
        'behind), set force: true; to remove it, state: absent.',
    )
