# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one error type: reason, stable cause, fix."""


import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import CAUSES, Tx9Error


def test_an_error_carries_its_reason_cause_and_fix():
    err = Tx9Error('The box x does not exist.', 'NO_BOX', 'Create it first.')

    assert err.reason == 'The box x does not exist.'
    assert err.cause == 'NO_BOX'
    assert err.fix == 'Create it first.'
    assert err.details == {}


def test_an_error_is_an_exception_whose_message_is_the_reason():
    with pytest.raises(Exception) as info:
        raise Tx9Error('Docker is not running.', 'DOCKER_UNAVAILABLE', 'Start Docker.')

    assert info.value.args == ('Docker is not running.',)


def test_an_error_with_an_unknown_cause_is_refused():
    with pytest.raises(ValueError, match='NOT_A_CAUSE'):
        raise Tx9Error('Something broke.', 'NOT_A_CAUSE', 'Do something.')


def test_every_cause_is_an_upper_case_identifier_listed_once():
    assert len(CAUSES) == len(set(CAUSES))
    for cause in CAUSES:
        assert cause.isupper() and cause.replace('_', '').isalpha()


def test_every_listed_cause_is_accepted():
    for cause in CAUSES:
        assert Tx9Error('reason', cause).cause == cause


def test_as_result_gives_the_keys_of_a_failed_module_result():
    err = Tx9Error('The name is taken.', 'NAME_EXISTS', 'Pick another name.')

    assert err.as_result() == dict(msg='The name is taken.', cause='NAME_EXISTS', fix='Pick another name.')


def test_as_result_adds_the_details_next_to_msg_cause_and_fix():
    err = Tx9Error('The box is busy.', 'BOX_BUSY', 'Wait.', details=dict(box='b1', holder=42))

    assert err.as_result() == dict(msg='The box is busy.', cause='BOX_BUSY', fix='Wait.', box='b1', holder=42)


def test_as_result_does_not_share_state_with_the_error():
    err = Tx9Error('The box is busy.', 'BOX_BUSY', 'Wait.', details=dict(box='b1'))

    err.as_result()['box'] = 'changed'

    assert err.details == dict(box='b1')


def test_the_text_of_an_error_names_the_cause_and_the_fix():
    err = Tx9Error('The box x does not exist.', 'NO_BOX', 'Run tx9_box with state=present.')

    assert str(err) == 'The box x does not exist. (NO_BOX)\n  fix: Run tx9_box with state=present.'


def test_the_text_of_an_error_without_a_fix_names_only_the_cause():
    assert str(Tx9Error('It broke.', 'DOCKER_ERROR')) == 'It broke. (DOCKER_ERROR)'
    assert Tx9Error('It broke.', 'DOCKER_ERROR').as_result()['fix'] == ''
