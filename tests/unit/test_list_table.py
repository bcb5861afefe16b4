# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The table playbooks/list.yml prints: units, usage, unreachable hosts, superseded copies, and 100 columns."""

from __future__ import annotations

from typing import Any

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.col_agents.tx9.plugins.filter.list_table import FilterModule
from ansible_collections.col_agents.tx9.plugins.plugin_utils import _list_table as table

GIB = 1024 ** 3
MIB = 1024 ** 2
list_table = FilterModule().filters()['list_table']


def box(name: str = 'dev', state: str = 'running', **extra: Any) -> dict[str, Any]:
    found: dict[str, Any] = dict(
        name=name, state=state, version='0.1.0', drift=False, dashboard_url='http://192.0.2.10:32768/',
        limits=dict(agent_memory=8 * GIB, executor_memory=2 * GIB),
        volumes=dict(agent=dict(exists=True, used_bytes=int(1.2 * GIB), budget_bytes=None, over_budget=False),
                     executor=dict(exists=True, used_bytes=0, budget_bytes=None, over_budget=False)),
        superseded=None,
        usage=dict(agent=dict(cpu_percent=3.5, memory_bytes=int(1.2 * GIB), memory_limit_bytes=8 * GIB),
                   executor=dict(cpu_percent=0.25, memory_bytes=0, memory_limit_bytes=2 * GIB)),
    )
    found.update(extra)
    return found


def cells(line: str) -> list[str]:
    return line.split()


@pytest.mark.parametrize('value, text', [
    (0, '0B'), (1023, '1023B'), (1536, '1.5K'), (int(1.2 * GIB), '1.2G'), (8 * GIB, '8G'),
    (12 * GIB + 300 * MIB, '12G'), (1023.99 * MIB, '1G'), (None, '?'),
])
def test_sizes_are_printed_in_powers_of_1024_with_one_decimal_below_ten(value: Any, text: str) -> None:
    assert table.human_bytes(value) == text


def test_a_running_box_shows_its_cpu_memory_and_volume_use_summed_over_its_containers() -> None:
    lines = list_table(dict(h1=dict(boxes=[box()])))
    assert cells(lines[0]) == ['HOST', 'BOX', 'STATE', 'VERSION', 'DRIFT', 'CPU', 'MEMORY', 'VOLUME', 'DASHBOARD']
    assert cells(lines[1]) == ['h1', 'dev', 'running', '0.1.0', 'no', '3.8%', '1.2G/10G', '1.2G',
                               'http://192.0.2.10:32768/']


def test_a_container_without_a_memory_limit_caps_the_box_limit_at_the_host_memory() -> None:
    usage = dict(agent=dict(cpu_percent=1.0, memory_bytes=GIB, memory_limit_bytes=16 * GIB),
                 executor=dict(cpu_percent=1.0, memory_bytes=GIB, memory_limit_bytes=2 * GIB))
    line = list_table(dict(h1=dict(boxes=[box(usage=usage, limits=dict(executor_memory=2 * GIB))])))[1]
    assert cells(line)[6] == '2G/16G'


def test_volume_budgets_are_shown_when_every_volume_has_one_and_an_overrun_is_marked() -> None:
    volumes = dict(agent=dict(exists=True, used_bytes=12 * GIB, budget_bytes=10 * GIB, over_budget=True),
                   executor=dict(exists=True, used_bytes=GIB, budget_bytes=GIB, over_budget=False))
    assert cells(list_table(dict(h1=dict(boxes=[box(volumes=volumes)])))[1])[7] == '13G/11G!'
    volumes['executor']['budget_bytes'] = None
    assert cells(list_table(dict(h1=dict(boxes=[box(volumes=volumes)])))[1])[7] == '13G!'


def test_a_stopped_box_shows_dashes_for_cpu_and_memory_but_still_its_volume_use() -> None:
    stopped = box('old', 'stopped', usage=dict(agent=None, executor=None), dashboard_url=None)
    assert cells(list_table(dict(h1=dict(boxes=[stopped])))[1])[2:] == ['stopped', '0.1.0', 'no', '-', '-', '1.2G', '-']


def test_a_listing_without_usage_shows_dashes_for_cpu_and_memory() -> None:
    plain = box()
    del plain['usage']
    assert cells(list_table(dict(h1=dict(boxes=[plain])))[1])[5:7] == ['-', '-']


def test_a_superseded_copy_says_by_which_host_and_hosts_come_sorted() -> None:
    copy = box(state='stopped', superseded=dict(by='h2', at='2026-12-03T15:00:00Z', move='h1 -> h2'),
               usage=dict(agent=None, executor=None))
    lines = list_table(dict(h2=dict(boxes=[box()]), h1=dict(boxes=[copy])), width=120)
    assert cells(lines[1])[:5] == ['h1', 'dev', 'stopped,', 'superseded', 'by'] and cells(lines[1])[5] == 'h2'
    assert lines[2].startswith('h2 ')


def test_unreachable_and_unlisted_hosts_get_a_row_saying_why_with_the_error_below_and_skipped_hosts_none() -> None:
    infos = dict(a=dict(unreachable=True, msg='Failed to connect to the host via ssh\nmore'),
                 b=dict(failed=True, msg='docker is missing'), c=dict(skipped=True), d=dict(boxes=[box()]))
    lines = list_table(infos)
    assert len(lines) == 6 and all(len(line) <= 100 for line in lines)
    assert cells(lines[1]) == ['a', '-', 'unreachable', '-', '-', '-', '-', '-']
    assert lines[2] == '    Failed to connect to the host via ssh'
    assert cells(lines[3]) == ['b', '-', 'not', 'listed', '-', '-', '-', '-', '-'] and lines[4] == '    docker is missing'
    # The errors do not push the dashboard URLs off the rows.
    assert cells(lines[5])[0] == 'd' and cells(lines[5])[-1] == 'http://192.0.2.10:32768/'


def test_no_boxes_anywhere_prints_the_header_and_says_so() -> None:
    assert list_table(dict(h1=dict(boxes=[]), h2=dict(skipped=True)))[1:] == ['(no boxes)']


def test_long_names_move_the_dashboard_below_each_row_and_no_line_exceeds_100_columns() -> None:
    long_host = 'storage-node-' + 'x' * 40
    boxes = [box('a-very-long-box-name-' + 'y' * 30, dashboard_url='http://[2001:db8::1234:5678]:32768/' + 'p' * 70),
             box(state='stopped', superseded=dict(by='another-long-host-name.example.org'))]
    infos = {long_host: dict(boxes=boxes), 'h2': dict(unreachable=True, msg='z' * 200)}
    lines = list_table(infos)
    assert all(len(line) <= 100 for line in lines), [len(line) for line in lines]
    assert cells(lines[0])[-1] == 'VOLUME' and lines[1].strip() == 'DASHBOARD'
    assert cells(lines[2])[:3] == ['h2', '-', 'unreachable'] and lines[3] == '    ' + 'z' * 80
    assert cells(lines[4])[5:] == ['3.8%', '1.2G/10G', '1.2G']
    assert lines[5].startswith('    http://[2001:db8::1234:5678]:32768/') and lines[5].endswith('~')
    assert cells(lines[4])[0].endswith('~') and cells(lines[4])[1].endswith('~')
    assert cells(lines[6])[2].startswith('stopped,') and lines[7].strip() == 'http://192.0.2.10:32768/'
    # Every row's cells start where their column's title does.
    at = lines[0].index('VERSION')
    assert [row[at:at + 5] for row in (lines[4], lines[6])] == ['0.1.0', '0.1.0'] and lines[2][at] == '-'


def test_a_box_without_a_dashboard_gets_no_line_below_it_when_the_urls_do_not_fit() -> None:
    stopped = box('old', 'stopped', dashboard_url=None, usage=dict(agent=None, executor=None))
    lines = list_table(dict(h1=dict(boxes=[box(dashboard_url='http://x/' + 'p' * 60), stopped])))
    assert [line[:6] for line in lines] == ['HOST  ', '    DA', 'h1    ', '    ht', 'h1    ']


def test_a_narrower_width_is_honoured_and_columns_stay_aligned() -> None:
    lines = list_table(dict(h1=dict(boxes=[box('dev'), box('second-box')])), width=70)
    assert all(len(line) <= 70 for line in lines)
    header = lines[0]
    for row in lines[2::2]:
        assert row.index(cells(row)[5], header.index('CPU') - 1) == header.index('CPU')


def test_a_table_of_anything_but_a_mapping_or_an_odd_width_fails_with_invalid_argument() -> None:
    with pytest.raises(AnsibleFilterError, match='INVALID_ARGUMENT'):
        list_table(['h1'])
    with pytest.raises(AnsibleFilterError, match='INVALID_ARGUMENT'):
        list_table({}, width=10)


def test_a_running_boxs_tools_are_on_the_line_below_it_with_their_source_and_a_pin_not_installed() -> None:
    tools = dict(codex=dict(installed='0.169.0', source='box', pinned='0.169.0', package='@openai/codex'),
                 claude=dict(installed='2.1.332', source='image', pinned='2.1.300',
                             package='@anthropic-ai/claude-code'))
    lines = list_table(dict(h1=dict(boxes=[box(tools=tools), box('old', 'stopped', tools=None)])), width=160)
    assert cells(lines[1])[:2] == ['h1', 'dev']
    assert lines[2] == '    tools: claude 2.1.332 (image, pin 2.1.300 not installed), codex 0.169.0 (box)'
    assert cells(lines[3])[:2] == ['h1', 'old'] and len(lines) == 4
