# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Container limits and volume budgets: parsing, defaults, precedence and views."""


import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box import limits as resources
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

GIB = 1024 ** 3
MIB = 1024 ** 2


@pytest.mark.parametrize('text, expected', [
    ('512m', 512 * MIB),
    ('8g', 8 * GIB),
    ('8G', 8 * GIB),
    ('8GiB', 8 * GIB),
    ('8gb', 8 * GIB),
    (' 2 g ', 2 * GIB),
    ('1.5g', int(1.5 * GIB)),
    ('1k', 1024),
    ('1t', 1024 ** 4),
    ('100b', 100),
    ('4096', 4096),
    (4096, 4096),
])
def test_sizes_are_read_in_binary_units(text, expected):
    assert resources.parse_size('agent_memory', text) == expected


@pytest.mark.parametrize('text', ['lots', '8x', '-1g', '', 'g', '1.g', True])
def test_text_that_is_not_a_size_is_refused_with_invalid_resources(text):
    with pytest.raises(Tx9Error) as info:
        resources.parse_size('agent_memory', text)
    assert info.value.cause == 'INVALID_RESOURCES'
    assert 'agent_memory' in info.value.reason


def test_a_negative_byte_count_is_refused_with_invalid_resources():
    with pytest.raises(Tx9Error) as info:
        resources.parse_size('agent_memory', -1)
    assert info.value.cause == 'INVALID_RESOURCES'
    assert 'negative' in info.value.reason


def test_memory_below_six_mebibytes_is_refused_and_six_is_accepted():
    assert resources.parse_memory('executor_memory', '6m') == 6 * MIB
    with pytest.raises(Tx9Error) as info:
        resources.parse_memory('executor_memory', '5m')
    assert info.value.cause == 'INVALID_RESOURCES'


@pytest.mark.parametrize('text', ['unlimited', 'UNLIMITED', 'none', '0', ' 0 ', 0, '0g'])
def test_unlimited_none_and_zero_budgets_mean_no_budget(text):
    assert resources.parse_budget('agent_volume_budget', text) == 0


def test_a_budget_is_a_size():
    assert resources.parse_budget('agent_volume_budget', '20g') == 20 * GIB


def test_cpus_become_nano_cpus():
    assert resources.parse_cpus('agent_cpus', 1.5, 8) == 1500000000
    assert resources.parse_cpus('agent_cpus', '2', 8) == 2 * resources.NANO


def test_as_many_cpus_as_the_host_has_are_accepted():
    assert resources.parse_cpus('agent_cpus', 4, 4) == 4 * resources.NANO


def test_more_cpus_than_the_host_has_are_refused_with_invalid_resources():
    with pytest.raises(Tx9Error) as info:
        resources.parse_cpus('agent_cpus', 4.5, 4)
    assert info.value.cause == 'INVALID_RESOURCES'
    assert 'only 4 CPUs' in info.value.reason
    assert 'at most 4' in info.value.fix


def test_any_cpu_count_is_accepted_when_the_host_cpu_count_is_unknown():
    assert resources.parse_cpus('agent_cpus', 64, 0) == 64 * resources.NANO


@pytest.mark.parametrize('value', [0, -1, '0', 'many', None])
def test_zero_negative_or_non_numeric_cpus_are_refused_with_invalid_resources(value):
    with pytest.raises(Tx9Error) as info:
        resources.parse_cpus('executor_cpus', value, 8)
    assert info.value.cause == 'INVALID_RESOURCES'


@pytest.mark.parametrize('value, host_cpus', [('nan', 8), ('inf', 0)])
def test_nan_or_infinite_cpus_are_refused_with_invalid_resources(value, host_cpus):
    with pytest.raises(Tx9Error) as info:
        resources.parse_cpus('agent_cpus', float(value), host_cpus)
    assert info.value.cause == 'INVALID_RESOURCES'


def test_cpus_so_small_they_round_to_zero_nano_cpus_are_refused_rather_than_made_unlimited():
    with pytest.raises(Tx9Error) as info:
        resources.parse_cpus('agent_cpus', 1e-10, 8)
    assert info.value.cause == 'INVALID_RESOURCES'


def test_defaults_are_four_and_two_cpus_eight_and_two_gib_and_no_budgets():
    assert resources.defaults(16) == dict(
        agent_cpus=4 * resources.NANO, agent_memory=8 * GIB, agent_volume_budget=0,
        executor_cpus=2 * resources.NANO, executor_memory=2 * GIB, executor_volume_budget=0)


def test_default_cpus_are_clamped_to_the_host_cpus():
    values = resources.defaults(1)
    assert values['agent_cpus'] == resources.NANO
    assert values['executor_cpus'] == resources.NANO


def test_default_cpus_are_unclamped_when_the_host_cpu_count_is_unknown():
    values = resources.defaults(0)
    assert values['agent_cpus'] == 4 * resources.NANO
    assert values['executor_cpus'] == 2 * resources.NANO


def test_resolve_prefers_the_given_option_over_state_live_and_default():
    resolved = resources.resolve({'agent_memory': '4g'}, {'TX9_AGENT_MEMORY_BYTES': str(3 * GIB)}, lambda: 8,
                                 live={'agent_memory': 5 * GIB})
    assert resolved['agent_memory'] == 4 * GIB


def test_resolve_prefers_the_persisted_state_over_the_live_value():
    resolved = resources.resolve({}, {'TX9_AGENT_MEMORY_BYTES': str(3 * GIB)}, lambda: 8,
                                 live={'agent_memory': 5 * GIB})
    assert resolved['agent_memory'] == 3 * GIB


def test_resolve_uses_the_live_value_when_nothing_is_given_or_persisted():
    resolved = resources.resolve({}, {'TX9_AGENT_MEMORY_BYTES': ''}, lambda: 8, live={'agent_memory': 5 * GIB})
    assert resolved['agent_memory'] == 5 * GIB


def test_resolve_falls_back_to_the_defaults():
    assert resources.resolve({}, {}, lambda: 8) == resources.defaults(8)
    assert resources.resolve({'agent_cpus': None}, {}, lambda: 8, live={'agent_cpus': None}) == resources.defaults(8)


def test_resolve_validates_given_options_against_the_host_cpus():
    with pytest.raises(Tx9Error) as info:
        resources.resolve({'executor_cpus': 3.0}, {}, lambda: 2)
    assert info.value.cause == 'INVALID_RESOURCES'


def test_to_state_stores_numbers_as_text_and_drops_unlimited_budgets():
    state = resources.to_state(resources.defaults(8))
    assert state == {
        'TX9_AGENT_NANO_CPUS': str(4 * resources.NANO),
        'TX9_AGENT_MEMORY_BYTES': str(8 * GIB),
        'TX9_EXECUTOR_NANO_CPUS': str(2 * resources.NANO),
        'TX9_EXECUTOR_MEMORY_BYTES': str(2 * GIB),
        'TX9_AGENT_VOLUME_BUDGET_BYTES': '',
        'TX9_EXECUTOR_VOLUME_BUDGET_BYTES': '',
    }


def test_state_round_trips_through_resolve():
    given = resources.resolve({'agent_cpus': 1.25, 'executor_memory': '3g', 'agent_volume_budget': '10g'}, {},
                              lambda: 8)
    assert resources.resolve({}, resources.to_state(given), lambda: 8) == given


def test_human_shows_cpus_as_counts_sizes_as_bytes_and_zero_budgets_as_unlimited():
    values = resources.resolve({'agent_cpus': 1.5, 'executor_volume_budget': '1g'}, {}, lambda: 8)
    assert resources.human(values) == dict(
        agent_cpus=1.5, agent_memory=8 * GIB, agent_volume_budget='unlimited',
        executor_cpus=2.0, executor_memory=2 * GIB, executor_volume_budget=GIB)


@pytest.mark.parametrize('written, shown', [
    ('3g', '3 GiB'), ('3GiB', '3 GiB'), ('512m', '512 MiB'), ('1.5g', '1536 MiB'), ('2t', '2 TiB'),
    ('6m', '6 MiB'), ('7000k', '7000 KiB'), (6291457, '6291457 B'),
])
def test_a_diff_shows_memory_in_the_binary_unit_that_holds_it_whole_never_in_bytes(written, shown):
    values = resources.resolve({'agent_memory': written}, {}, lambda: 8)
    view = resources.diff_view(values)
    assert view['agent_memory'] == shown
    assert view['executor_memory'] == '2 GiB'
    assert view['agent_cpus'] == 4.0


def test_a_diff_shows_budgets_in_binary_units_and_zero_as_unlimited():
    values = resources.resolve({'agent_volume_budget': '10g'}, {}, lambda: 8)
    view = resources.diff_view(values)
    assert view['agent_volume_budget'] == '10 GiB' and view['executor_volume_budget'] == 'unlimited'


def test_twelve_parsecs_of_memory_is_refused_naming_the_option_and_the_value():
    with pytest.raises(Tx9Error) as info:
        resources.resolve({'agent_memory': '12 parsecs'}, {}, lambda: 8)
    assert info.value.cause == 'INVALID_RESOURCES'
    assert info.value.reason == "agent_memory='12 parsecs' is not valid: it is not a size."


@pytest.mark.parametrize('option, text', [
    ('agent_memory', '9' * 400),
    ('agent_memory', '9' * 30 + 't'),
    ('executor_memory', str(2 ** 62) + 'b'),
    ('agent_volume_budget', '9' * 25),
])
def test_a_size_too_large_for_docker_to_represent_is_refused_rather_than_overflowing(option, text):
    with pytest.raises(Tx9Error) as info:
        resources.resolve({option: text}, {}, lambda: 8)
    assert info.value.cause == 'INVALID_RESOURCES'
    assert info.value.reason.startswith('%s=%r is not valid: it is more than Docker can represent' % (option, text))


def test_the_largest_memory_whose_swap_docker_can_represent_is_accepted():
    assert resources.parse_memory('agent_memory', resources.MAX_MEMORY) == resources.MAX_MEMORY
    assert 2 * resources.MAX_MEMORY <= 2 ** 63 - 1


@pytest.mark.parametrize('value, words', [
    (-1, 'it is negative'),
    (-0.5, 'it is negative'),
    (float('nan'), 'it is not a finite number'),
    (float('inf'), 'it is not a finite number'),
    (float('-inf'), 'it is not a finite number'),
    ('lots', 'it is not a number of CPUs'),
    (0.001, 'Docker needs at least 0.01 CPUs'),
    (3, 'this host has only 2 CPUs and Docker refuses more'),
])
def test_each_cpu_refusal_says_why_naming_the_option_and_value(value, words):
    with pytest.raises(Tx9Error) as info:
        resources.parse_cpus('executor_cpus', value, 2)
    assert info.value.reason == 'executor_cpus=%r is not valid: %s.' % (value, words)


def test_cpus_beyond_what_docker_can_represent_are_refused_when_the_host_cpu_count_is_unknown():
    with pytest.raises(Tx9Error) as info:
        resources.parse_cpus('agent_cpus', 1e300, 0)
    assert 'more than Docker can represent' in info.value.reason


def test_container_limits_give_swap_at_twice_the_memory():
    values = resources.defaults(8)
    assert resources.container_limits(values, 'executor') == dict(
        NanoCpus=2 * resources.NANO, Memory=2 * GIB, MemorySwap=4 * GIB)


def test_limits_differ_only_in_cpus_or_memory():
    limits = dict(NanoCpus=resources.NANO, Memory=GIB, MemorySwap=2 * GIB)
    assert not resources.limits_differ(dict(NanoCpus=resources.NANO, Memory=GIB, MemorySwap=0), limits)
    assert resources.limits_differ(dict(NanoCpus=2 * resources.NANO, Memory=GIB), limits)
    assert resources.limits_differ(dict(NanoCpus=resources.NANO, Memory=2 * GIB), limits)


@pytest.mark.parametrize('value', ['lots', True, '', [2]])
def test_cpus_that_are_not_a_number_are_refused_saying_what_a_number_of_cpus_looks_like(value):
    with pytest.raises(Tx9Error) as info:
        resources.resolve({'agent_cpus': value}, {}, lambda: 8)
    assert info.value.cause == 'INVALID_RESOURCES'
    assert info.value.reason == 'agent_cpus=%r is not valid: it is not a number of CPUs.' % (value,)
    assert info.value.fix == 'Give a number of CPUs such as 1.5 (at least 0.01).'


def test_cpus_given_as_a_string_of_a_number_are_read_as_that_number():
    assert resources.resolve({'agent_cpus': '1.5', 'executor_cpus': 1}, {}, lambda: 8)['agent_cpus'] == 1_500_000_000


def test_a_budget_that_is_not_a_size_is_refused_saying_that_unlimited_is_allowed():
    with pytest.raises(Tx9Error) as info:
        resources.resolve({'agent_volume_budget': 'lots'}, {}, lambda: 8)
    assert info.value.reason == "agent_volume_budget='lots' is not valid: it is not a size."
    assert info.value.fix == 'Give bytes, a size such as 512m, 50g or 8GiB, or unlimited.'


def test_memory_and_budgets_given_as_integers_of_bytes_are_taken_as_tx9_info_desired_gives_them():
    values = resources.resolve({'agent_memory': 512 * 1024 ** 2, 'agent_volume_budget': 10 * 1024 ** 3}, {}, lambda: 8)
    assert (values['agent_memory'], values['agent_volume_budget']) == (512 * 1024 ** 2, 10 * 1024 ** 3)


PERSISTED_CPUS = {'TX9_AGENT_NANO_CPUS': '2000000000', 'TX9_EXECUTOR_NANO_CPUS': '1000000000'}


class CpuCount:
    """A host's CPU count that records how often it was asked."""

    def __init__(self, cpus):
        self.cpus = cpus
        self.asked = 0

    def __call__(self):
        self.asked += 1
        return self.cpus


@pytest.mark.parametrize('params, persisted, live, asked', [
    ({'executor_cpus': 1.5}, {}, {}, 1),
    ({'agent_cpus': 1, 'executor_cpus': 1.5}, PERSISTED_CPUS, {}, 1),
    ({}, {}, {}, 1),
    ({}, PERSISTED_CPUS, {}, 0),
    ({'agent_memory': '4g'}, PERSISTED_CPUS, {}, 0),
    ({}, {}, {'agent_cpus': 2000000000, 'executor_cpus': 1000000000}, 0),
    ({}, {'TX9_AGENT_NANO_CPUS': '2000000000'}, {}, 1),
])
def test_resolve_asks_the_host_cpu_count_once_and_only_for_a_cpu_option_given_or_taking_its_default(
        params, persisted, live, asked):
    count = CpuCount(8)
    resources.resolve(params, persisted, count, live)
    assert count.asked == asked


@pytest.mark.parametrize('params, asked', [
    ({}, 0),
    ({'agent_memory': '4g', 'executor_volume_budget': '1g'}, 0),
    ({'executor_cpus': 1.5}, 1),
    ({'agent_cpus': 1, 'executor_cpus': 1.5}, 1),
])
def test_validate_asks_the_host_cpu_count_once_and_only_for_a_cpu_option_given(params, asked):
    count = CpuCount(8)
    resources.validate(params, count)
    assert count.asked == asked


def test_validate_refuses_a_cpu_option_beyond_the_host_cpus_as_resolve_does():
    with pytest.raises(Tx9Error) as info:
        resources.validate({'executor_cpus': 3.0}, CpuCount(2))
    assert info.value.cause == 'INVALID_RESOURCES'


@pytest.mark.parametrize('params', [{}, {'agent_memory': '4g'}])
def test_limits_that_need_no_host_cpu_count_resolve_the_same_whatever_the_host_has(params):
    assert resources.resolve(params, PERSISTED_CPUS, lambda: 0) == resources.resolve(params, PERSISTED_CPUS, lambda: 1)


def test_a_default_cpu_limit_is_clamped_to_the_cpu_count_asked_lazily():
    assert resources.resolve({}, {}, CpuCount(1))['agent_cpus'] == resources.NANO
