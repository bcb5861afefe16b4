# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9_logs on the host: its options, which volume is asked for what, and the merge of both answers."""

from __future__ import annotations

import datetime
from typing import Any, cast

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box.state import StateHome
from ansible_collections.col_agents.tx9.plugins.module_utils._ops import logs
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.tests.unit.box.box_kit import FakeObjects

NOW = datetime.datetime(2026, 7, 4, 12, 0, 0, tzinfo=datetime.timezone.utc)
TOKEN = 'c' * 64
# These queries never get as far as the state home.
NO_HOME = cast(StateHome, None)


@pytest.mark.parametrize('value, expected', [
    ('30m', '2026-07-04T11:30:00.000Z'),
    ('2h', '2026-07-04T10:00:00.000Z'),
    ('1d', '2026-07-03T12:00:00.000Z'),
    (' 45s ', '2026-07-04T11:59:15.000Z'),
    ('1w', '2026-06-27T12:00:00.000Z'),
    ('2026-07-01T08:00:00Z', '2026-07-01T08:00:00.000Z'),
    ('2026-07-01T10:00:00.250+02:00', '2026-07-01T08:00:00.250Z'),
    ('2026-07-01T08:00:00', '2026-07-01T08:00:00.000Z'),
    ('2026-07-01', '2026-07-01T00:00:00.000Z'),
    (None, None),
])
def test_since_takes_an_age_or_an_iso_time_and_becomes_utc(value: str, expected: str) -> None:
    assert logs.parse_since(value, NOW) == expected


@pytest.mark.parametrize('value', ['yesterday', '30 minutes', '-5m', '5y', '2026-13-01', 'm30'])
def test_a_since_that_is_neither_is_an_invalid_argument(value: str) -> None:
    with pytest.raises(Tx9Error) as caught:
        logs.parse_since(value, NOW)
    assert caught.value.cause == 'INVALID_ARGUMENT' and '30m' in caught.value.reason


def test_sources_are_checked_and_kept_once_in_order() -> None:
    assert logs.check_sources(['codex', 'service-web', 'codex', 'executor']) == ['codex', 'service-web', 'executor']
    assert logs.check_sources(None) is None and logs.check_sources([]) is None


@pytest.mark.parametrize('source', ['Agent', 'service-', 'service-../x', 'journal', 'service-' + 'a' * 64])
def test_an_unknown_source_is_an_invalid_argument(source: str) -> None:
    with pytest.raises(Tx9Error) as caught:
        logs.check_sources([source])
    assert caught.value.cause == 'INVALID_ARGUMENT'


@pytest.mark.parametrize('limit', [0, -1, logs.MAX_LIMIT + 1])
def test_a_limit_out_of_range_is_an_invalid_argument(limit: int) -> None:
    with pytest.raises(Tx9Error) as caught:
        logs.LogQuery(None, NO_HOME, dict(name='dev', limit=limit))
    assert caught.value.cause == 'INVALID_ARGUMENT'


def query(**params: Any) -> logs.LogQuery:
    params.setdefault('name', 'dev')
    return logs.LogQuery(None, NO_HOME, params)


def test_all_sources_ask_the_agent_volume_for_everything_and_the_executor_volume_for_its_log() -> None:
    assert query().plan() == [('agent', None), ('executor', ['executor'])]


def test_only_the_volumes_holding_a_wanted_source_are_asked() -> None:
    assert query(sources=['executor']).plan() == [('executor', ['executor'])]
    assert query(sources=['codex', 'service-web']).plan() == [('agent', ['codex', 'service-web'])]
    assert query(sources=['executor', 'hermes']).plan() == [('agent', ['hermes']), ('executor', ['executor'])]


def test_the_guest_is_asked_with_every_filter_as_its_own_argument() -> None:
    assert logs.events_args(['service-web'], '2026-07-04T11:30:00.000Z', 'deploy; rm -rf /', 'error', 50) == [
        'events', '--limit', '50', '--source', 'service-web', '--since', '2026-07-04T11:30:00.000Z',
        '--contains', 'deploy; rm -rf /', '--level', 'error']
    assert logs.events_args(None, None, None, None, 200) == ['events', '--limit', '200']


def event(time: str, source: str = 'agent', message: str = 'm') -> dict[str, Any]:
    return dict(time=time, source=source, level='info', message=message)


def test_both_answers_merge_oldest_first_keeping_the_newest_limit() -> None:
    agent = dict(events=[event('2026-07-04T12:00:01.000Z'), event('2026-07-04T12:00:03.000Z')], skipped=2,
                 partial=['codex: read only the newest 500 of 900 files'])
    executor = dict(events=[event('2026-07-04T12:00:02.000Z', 'executor'), event('2026-07-04T12:00:04.000Z', 'executor')],
                    skipped=1, partial=[])
    merged = logs.merge([agent, executor], 3)
    assert [e['time'][17:19] for e in merged['events']] == ['02', '03', '04']
    assert merged['skipped_count'] == 3 and merged['partial'] == ['codex: read only the newest 500 of 900 files']


def test_the_token_is_replaced_anywhere_in_the_merged_result() -> None:
    answer = dict(events=[dict(event('2026-07-04T12:00:01.000Z', message='t=%s' % TOKEN), data={TOKEN: [TOKEN]})],
                  skipped=0, partial=['odd %s' % TOKEN])
    merged = logs.merge([answer], 10, TOKEN)
    assert TOKEN not in repr(merged)
    assert merged['events'][0]['message'] == 't=[REDACTED]'


def test_events_without_a_time_text_are_dropped_from_a_malformed_answer() -> None:
    merged = logs.merge([dict(events=[{'time': 5}, 'x', event('2026-07-04T12:00:01.000Z')])], 10)
    assert len(merged['events']) == 1


def test_the_options_are_checked_before_docker_is_asked_anything() -> None:
    with pytest.raises(Tx9Error) as caught:
        logs.LogQuery(None, NO_HOME, dict(name='dev', since='soon')).run()
    assert caught.value.cause == 'INVALID_ARGUMENT'


class EgressLogsApi:
    def __init__(self, text):
        self.text = text
        self.asked = None

    def logs(self, container_id, **options):
        self.asked = (container_id, options)
        return self.text.encode()


def test_the_egress_source_turns_each_proxy_decision_into_an_event_with_the_rule_that_decided():
    lines = [
        '1764763200.123 client=10.201.0.3 method=CONNECT host=allowed.test port=443 status=200 '
        'squid=TCP_TUNNEL/HIER_DIRECT err=- rule=allowed.test:443 dst=10.202.0.10:443 url=allowed.test:443 bytes=2154',
        '1764763201.000 client=10.201.0.3 method=CONNECT host=blocked.test port=443 status=403 '
        'squid=TCP_DENIED/HIER_NONE err=ERR_EGRESS_DENIED rule=deny:default dst=-:- url=blocked.test:443 bytes=0',
        'a line that is not a decision',
    ]
    api = EgressLogsApi('\n'.join(lines) + '\n')
    client = type('Client', (), {'api': api})()
    objects = FakeObjects(egress={'Id': 'egress-id'}, egress_network={'Name': 'tx9-dev-out'})
    answer = logs.egress_answer(client, objects, None, None, None)
    assert [(e['decision'], e['rule'], e['host'], e['level']) for e in answer['events']] == [
        ('allowed', 'allowed.test:443', 'allowed.test', 'info'), ('denied', 'deny:default', 'blocked.test', 'warning')]
    assert answer['events'][1]['message'] == 'denied CONNECT blocked.test:443 (rule deny:default)'
    assert answer['skipped'] == 1 and api.asked[1]['tail'] == logs.EGRESS_TAIL
    only_denied = logs.egress_answer(client, objects, '2025-12-03T12:00:00.500Z', 'BLOCKED', 'warning')
    assert [e['host'] for e in only_denied['events']] == ['blocked.test']


def test_the_egress_source_of_an_open_box_says_there_is_no_proxy():
    answer = logs.egress_answer(None, FakeObjects(), None, None, None)
    assert answer == dict(partial=['egress: the box has no egress proxy (it is open), so no decisions were read'])
