# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Box names, generated names, Docker object names and ownership labels."""


import os
import random

import pytest
import yaml

from ansible_collections.col_agents.tx9.plugins.module_utils import _names
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._version import COLLECTION_VERSION

ALL_PAIRS = set('%s-%s' % (a, b) for a in _names.ADJECTIVES for b in _names.ANIMALS)


@pytest.mark.parametrize('name', [
    'a', '7', 'my-box', 'my_box', 'box-01', '0box', 'a' * 63, 'a' + '-' * 62, 'swift-otter',
])
def test_a_valid_box_name_is_returned_unchanged(name):
    assert _names.validate_box_name(name) == name


@pytest.mark.parametrize('name', [
    '',
    'a' * 64,
    'MyBox',
    'box-A',
    '-box',
    '_box',
    'my box',
    'my.box',
    'box/1',
    '../etc',
    'bóx',
    'box\n',
    None,
    42,
], ids=repr)
def test_an_invalid_box_name_is_refused_with_invalid_name(name):
    with pytest.raises(Tx9Error) as info:
        _names.validate_box_name(name)

    assert info.value.cause == 'INVALID_NAME'
    assert info.value.fix


def test_the_longest_valid_name_has_63_characters_and_one_more_is_refused():
    assert _names.validate_box_name('b' * 63)
    with pytest.raises(Tx9Error):
        _names.validate_box_name('b' * 64)


def test_the_refusal_of_a_name_quotes_the_name():
    with pytest.raises(Tx9Error) as info:
        _names.validate_box_name('Bad Name')

    assert 'Bad Name' in info.value.reason


def test_a_generated_name_is_an_adjective_and_an_animal():
    name = _names.generate_name(set())

    adjective, animal = name.split('-')
    assert adjective in _names.ADJECTIVES
    assert animal in _names.ANIMALS
    assert _names.validate_box_name(name) == name


def test_generated_names_vary():
    assert len(set(_names.generate_name(set()) for dummy in range(50))) > 1


def test_a_generated_name_is_never_one_already_taken():
    rng = random.Random(1)
    taken = set(sorted(ALL_PAIRS)[:-3])

    for dummy in range(30):
        assert _names.generate_name(taken, rng=rng) in ALL_PAIRS - taken


def test_the_only_free_pair_is_the_one_generated():
    free = 'calm-otter'
    taken = ALL_PAIRS - set([free])

    assert _names.generate_name(taken, rng=random.Random(7)) == free


def test_when_every_pair_is_taken_a_generated_name_gets_a_four_digit_suffix():
    name = _names.generate_name(ALL_PAIRS, rng=random.Random(3))

    pair, suffix = name.rsplit('-', 1)
    assert pair in ALL_PAIRS
    assert len(suffix) == 4 and suffix.isdigit()
    assert _names.validate_box_name(name) == name


def test_a_suffixed_name_also_avoids_taken_names():
    first = _names.generate_name(ALL_PAIRS, rng=random.Random(5))

    second = _names.generate_name(ALL_PAIRS | set([first]), rng=random.Random(5))

    assert second != first
    assert second not in ALL_PAIRS


def test_the_docker_objects_of_a_box_are_named_after_it():
    assert _names.object_names('swift-otter') == dict(
        network='tx9-swift-otter',
        agent='tx9-swift-otter-agent',
        executor='tx9-swift-otter-executor',
        agent_volume='tx9-swift-otter-agent-data',
        executor_volume='tx9-swift-otter-exec-data',
        egress='tx9-swift-otter-egress',
        egress_network='tx9-swift-otter-out',
    )


def test_two_boxes_share_no_object_name():
    one = set(_names.object_names('one').values())
    two = set(_names.object_names('two').values())

    assert len(one) == 7
    assert not one & two


def test_box_labels_name_the_owner_the_box_and_the_collection_version():
    assert _names.box_labels('b1') == {'tx9': '1', 'tx9.box': 'b1', 'tx9.version': COLLECTION_VERSION}


def test_a_container_label_adds_its_role():
    labels = _names.box_labels('b1', role=_names.ROLE_EXECUTOR)

    assert labels['tx9.role'] == 'executor'
    assert labels['tx9.box'] == 'b1'


def test_the_version_on_labels_is_the_collection_version_in_galaxy_yml():
    galaxy = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'galaxy.yml')
    with open(galaxy) as handle:
        assert yaml.safe_load(handle)['version'] == COLLECTION_VERSION


def test_box_labels_take_an_explicit_version():
    assert _names.box_labels('b1', version='9.9.9')['tx9.version'] == '9.9.9'


def test_an_object_labelled_for_a_box_is_owned_by_that_box():
    assert _names.owned_by(_names.box_labels('b1', role=_names.ROLE_AGENT), 'b1')


def test_an_object_labelled_for_another_box_is_not_owned():
    assert not _names.owned_by(_names.box_labels('b2'), 'b1')


@pytest.mark.parametrize('labels', [
    None,
    {},
    {'tx9.box': 'b1'},
    {'tx9': '0', 'tx9.box': 'b1'},
    {'tx9': 'true', 'tx9.box': 'b1'},
    {'tx9': '1'},
    {'com.example': 'b1'},
], ids=repr)
def test_an_object_without_both_ownership_labels_is_not_owned(labels):
    assert not _names.owned_by(labels, 'b1')
