# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The table playbooks/list.yml prints: one row per box of every host, fitted to a terminal's width.

Private to the col_agents.tx9 collection. Input is host -> its registered tx9_info
result (with usage=true). A box's row: host, box, state, version, drift, CPU and
memory its running containers use, its volumes' use against their budgets, and its
dashboard URL, and for a running box its agent CLIs' versions and sources on the
line below. A host that could not be reached or listed gets a row saying why
instead, with the first line of its error indented on the line below. When the
dashboard column does not fit, each URL moves to a line of its own below its row
(none for a box without one); when the rest still does not fit, the widest of
host, box, state and version are cut (marked with "~") until it does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

HEADER = ('HOST', 'BOX', 'STATE', 'VERSION', 'DRIFT', 'CPU', 'MEMORY', 'VOLUME', 'DASHBOARD')
GAP = 2
INDENT = 4
CUT = '~'
# Column index -> the narrowest it is cut to: host, box, state and version.
SHRINKABLE = {0: 8, 1: 8, 2: 7, 3: 5}
UNITS = ('K', 'M', 'G', 'T', 'P')
NONE = '-'
MESSAGE = 80
NARROWEST = 40
CAUSE = 'INVALID_ARGUMENT'


def human_bytes(value: int | float | None) -> str:
    """1536 -> '1.5K', 8 GiB -> '8G'; powers of 1024, one decimal below ten; '?' for None."""
    if value is None:
        return '?'
    if value < 1024:
        return f'{int(value)}B'
    amount = float(value)
    for unit in UNITS:
        amount /= 1024.0
        if round(amount, 1) < 1024 or unit == UNITS[-1]:
            text = f'{amount:.1f}' if round(amount, 1) < 10 else f'{amount:.0f}'
            return (text[:-2] if text.endswith('.0') else text) + unit
    raise AssertionError('unreachable')  # pragma: no cover


def cpu_cell(samples: list[Mapping[str, Any]]) -> str:
    """The box's containers' CPU percentages summed; '-' when none runs, '?' when no figure came back."""
    if not samples:
        return NONE
    figures = [s['cpu_percent'] for s in samples if s.get('cpu_percent') is not None]
    if not figures:
        return '?'
    total = sum(figures)
    return f'{total:.1f}%' if total < 100 else f'{total:.0f}%'


def memory_cell(samples: Mapping[str, Mapping[str, Any]], limits: Mapping[str, Any]) -> str:
    """Memory in use / the box's memory limit, summed over its running containers.

    A container without a limit reports the host's memory as its limit: the box then
    can use no more than that, so the sum is capped there.
    """
    if not samples:
        return NONE
    used = [s.get('memory_bytes') for s in samples.values()]
    used_text = human_bytes(sum(u for u in used if u is not None)) if any(u is not None for u in used) else '?'
    caps = [s.get('memory_limit_bytes') for s in samples.values()]
    if any(c is None for c in caps):
        return used_text
    total = sum(c for c in caps if c is not None)
    host = [
        s['memory_limit_bytes']
        for role, s in samples.items()
        if role in ('agent', 'executor') and not limits.get(f'{role}_memory')
    ]
    if host:
        total = min(total, max(host))
    return f'{used_text}/{human_bytes(total)}'


def volume_cell(volumes: Mapping[str, Any]) -> str:
    """Bytes the box's volumes use / their budgets summed (only when each has one); '!' when one is over."""
    present = [v for v in volumes.values() if isinstance(v, Mapping) and v.get('exists', True)]
    if not present:
        return NONE
    used = [v.get('used_bytes') for v in present]
    text = human_bytes(sum(u for u in used if u is not None)) if any(u is not None for u in used) else '?'
    budgets = [v.get('budget_bytes') for v in present]
    if all(budgets):
        text += '/' + human_bytes(sum(b for b in budgets if b))
    if any(v.get('over_budget') for v in present):
        text += '!'
    return text


def box_row(host: str, box: Mapping[str, Any]) -> list[str]:
    superseded = box.get('superseded') or {}
    state = str(box.get('state') or NONE)
    if superseded:
        state += f', superseded by {superseded.get("by")}'
    usage = {role: s for role, s in (box.get('usage') or {}).items() if isinstance(s, Mapping)}
    return [
        host,
        str(box.get('name')),
        state,
        str(box.get('version') or NONE),
        'yes' if box.get('drift') else 'no',
        cpu_cell(list(usage.values())),
        memory_cell(usage, box.get('limits') or {}),
        volume_cell(box.get('volumes') or {}),
        str(box.get('dashboard_url') or NONE),
    ]


def tools_text(tools: Any) -> str:
    """The line below a running box's row: each agent CLI's version and where it comes from; '' when unknown."""
    if not isinstance(tools, Mapping) or not tools:
        return ''
    cells = []
    for tool in sorted(tools):
        seen = tools[tool] if isinstance(tools[tool], Mapping) else {}
        text = f'{tool} {seen.get("installed") or "?"} ({seen.get("source") or "missing"}'
        if seen.get('pinned') and seen.get('source') != 'box':
            text += f', pin {seen["pinned"]} not installed'
        cells.append(text + ')')
    return 'tools: ' + ', '.join(cells)


def host_rows(host: str, info: Mapping[str, Any]) -> list[list[str]]:
    """The rows of one host: its boxes, a row saying why it has none to show, or none when it was skipped."""
    if info.get('skipped'):
        return []
    if info.get('unreachable') or info.get('failed'):
        why = 'unreachable' if info.get('unreachable') else 'not listed'
        message = str(info.get('msg') or '').split('\n', maxsplit=1)[0][:MESSAGE].rstrip()
        return [[host, NONE, why, NONE, NONE, NONE, NONE, NONE, '', message]]
    return [box_row(host, box) + [tools_text(box.get('tools'))] for box in info.get('boxes') or []]


def rows(infos: Mapping[str, Any]) -> list[list[str]]:
    found: list[list[str]] = []
    for host in sorted(infos):
        info = infos[host]
        found.extend(host_rows(host, info if isinstance(info, Mapping) else {}))
    return found


def cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - len(CUT)] + CUT


def fitted_widths(table: list[list[str]], columns: int, width: int) -> list[int]:
    """The natural width of the first columns, the shrinkable ones narrowed until the line fits."""
    widths = [max(len(row[c]) for row in table) for c in range(columns)]
    while sum(widths) + GAP * (columns - 1) > width:
        candidates = [c for c, low in SHRINKABLE.items() if c < columns and widths[c] > low]
        if not candidates:
            break
        widest = max(candidates, key=lambda c: widths[c])
        widths[widest] -= 1
    return widths


def line(cells: list[str], widths: list[int]) -> str:
    return (' ' * GAP).join(cut(cell, w).ljust(w) for cell, w in zip(cells, widths)).rstrip()


def render(infos: Any, width: Any = 100) -> list[str]:
    """The table's lines, none longer than width; '(no boxes)' after the header when there is no row."""
    if not isinstance(infos, Mapping):
        raise Tx9Error(
            f'The list table was given a {type(infos).__name__}, not a mapping of host name to tx9_info result.',
            CAUSE,
            'Give list_table a dict such as {host: hostvars[host].registered_tx9_info_result}.',
        )
    if isinstance(width, bool) or not isinstance(width, int) or width < NARROWEST:
        raise Tx9Error(
            f'The list table width is {width!r}, which is too narrow or not a whole number.',
            CAUSE,
            f'Give width as a whole number of columns, {NARROWEST} or more.',
        )
    body = rows(infos)
    table = [list(HEADER) + ['']] + body
    columns = len(HEADER)
    natural = [max(len(row[c]) for row in table) for c in range(columns)]
    inline = sum(natural) + GAP * (columns - 1) <= width
    widths = natural if inline else fitted_widths(table, columns - 1, width)
    lines = []
    for row in table:
        lines.append(line(row[:columns] if inline else row[: columns - 1], widths)[:width])
        below = [row[columns]] if inline else [row[columns - 1], row[columns]]
        lines.extend(cut(' ' * INDENT + text, width) for text in below if text and text != NONE)
    return lines + ([] if body else ['(no boxes)'])
