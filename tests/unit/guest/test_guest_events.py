# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`hb events` over the durable logs: filters, the newest N, bounds, and what is skipped."""

import json
import os

import pytest

from tx9guest import eventquery

from conftest import TOKEN


def record(when, message, source='service-web', level=None, **extra):
    data = {'schema': 'tx9.event.v1', 'timestamp': when, 'box': 'demo', 'source': source,
            'stream': 'stdout', 'type': 'output', 'message': message}
    if level:
        data['level'] = level
    data.update(extra)
    return json.dumps(data)


def write_log(ctx, name, lines, mtime=None):
    os.makedirs(ctx.paths.logs, exist_ok=True)
    path = os.path.join(ctx.paths.logs, name)
    with open(path, 'w') as f:
        f.write(''.join(line + '\n' for line in lines))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def events(run_hb, ctx, *args):
    code, out, err = run_hb(ctx, 'events', *args)
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


def messages(result):
    return [e['message'] for e in result['events']]


def test_events_of_every_log_come_back_merged_oldest_first(box, run_hb):
    ctx = box()
    write_log(ctx, 'agent.jsonl', [record('2026-07-04T12:00:02.000Z', 'loop pass', 'agent')])
    write_log(ctx, 'service-web.jsonl', [record('2026-07-04T12:00:01.000Z', 'listening'),
                                         record('2026-07-04T12:00:03.000Z', 'served /')])
    result = events(run_hb, ctx)
    assert messages(result) == ['listening', 'loop pass', 'served /']
    assert [e['source'] for e in result['events']] == ['service-web', 'agent', 'service-web']
    assert result['events'][0] == {'time': '2026-07-04T12:00:01.000Z', 'source': 'service-web', 'level': 'info',
                                   'message': 'listening', 'origin': 'tx9-log', 'stream': 'stdout', 'type': 'output'}
    assert result['skipped'] == 0


def test_sources_since_contains_and_level_filter_together(box, run_hb):
    ctx = box()
    write_log(ctx, 'agent.jsonl', [record('2026-07-04T12:00:05.000Z', 'deploy failed', 'agent', 'error')])
    write_log(ctx, 'service-web.jsonl', [
        record('2026-07-04T11:00:00.000Z', 'old deploy failed', level='error'),
        record('2026-07-04T12:00:01.000Z', 'Deploy started'),
        record('2026-07-04T12:00:02.000Z', 'DEPLOY failed', level='error'),
        record('2026-07-04T12:00:03.000Z', 'unrelated', level='critical')])
    result = events(run_hb, ctx, '--source', 'service-web', '--since', '2026-07-04T12:00:00Z',
                    '--contains', 'deploy', '--level', 'error')
    assert messages(result) == ['DEPLOY failed']


def test_an_unleveled_event_counts_as_info_for_the_level_filter(box, run_hb):
    ctx = box()
    write_log(ctx, 'service-web.jsonl', [record('2026-07-04T12:00:01.000Z', 'plain'),
                                         record('2026-07-04T12:00:02.000Z', 'chatter', level='debug')])
    assert messages(events(run_hb, ctx, '--level', 'info')) == ['plain']
    assert events(run_hb, ctx, '--level', 'warning')['events'] == []


def test_limit_keeps_the_newest_events_across_rotated_files(box, run_hb):
    ctx = box()
    write_log(ctx, 'service-web.jsonl.1', [record('2026-07-04T12:00:0%d.000Z' % n, 'm%d' % n) for n in range(3)])
    write_log(ctx, 'service-web.jsonl', [record('2026-07-04T12:00:0%d.000Z' % n, 'm%d' % n) for n in range(3, 6)])
    assert messages(events(run_hb, ctx, '--limit', '4')) == ['m2', 'm3', 'm4', 'm5']


def test_a_rotated_file_older_than_since_is_not_opened(box, run_hb):
    ctx = box()
    write_log(ctx, 'service-web.jsonl.1', ['not json at all'], mtime=1_000_000_000)
    write_log(ctx, 'service-web.jsonl', [record('2026-07-04T12:00:01.000Z', 'new')])
    result = events(run_hb, ctx, '--since', '2026-01-01T00:00:00Z')
    assert messages(result) == ['new'] and result['skipped'] == 0


def test_malformed_lines_are_skipped_and_counted_never_fatal(box, run_hb):
    ctx = box()
    write_log(ctx, 'service-web.jsonl', [
        'not json', '[1, 2]', '{"timestamp": "yesterday", "message": "x"}', '{"timestamp": "2026-07-04T12:00:00Z"}',
        record('2026-07-04T12:00:01.000Z', 'good'), '{"message": "\xff\xfe"'])
    with open(os.path.join(ctx.paths.logs, 'service-web.jsonl'), 'ab') as f:
        f.write(b'\xff\xfe not utf-8\n' + record('2026-07-04T12:00:02.000Z', 'also good').encode())
    result = events(run_hb, ctx)
    assert messages(result) == ['good', 'also good']
    assert result['skipped'] == 6


def test_an_unfinished_last_line_is_not_counted_as_unreadable(box, run_hb):
    ctx = box()
    path = write_log(ctx, 'service-web.jsonl', [record('2026-07-04T12:00:01.000Z', 'done')])
    with open(path, 'a') as f:
        f.write('{"timestamp": "2026-07-04T12:00:02.000Z", "mess')
    result = events(run_hb, ctx)
    assert messages(result) == ['done'] and result['skipped'] == 0


def test_a_line_over_the_bound_is_skipped_without_being_held(box, run_hb, monkeypatch):
    monkeypatch.setattr(eventquery, 'MAX_LINE_BYTES', 4096)
    ctx = box()
    huge = record('2026-07-04T12:00:01.000Z', 'x' * 100000)
    write_log(ctx, 'service-web.jsonl', [huge, record('2026-07-04T12:00:02.000Z', 'after')])
    result = events(run_hb, ctx)
    assert messages(result) == ['after'] and result['skipped'] == 1


def test_only_the_tail_of_a_file_over_the_bound_is_read_and_that_is_said(box, run_hb, monkeypatch):
    monkeypatch.setattr(eventquery, 'MAX_FILE_BYTES', 2048)
    ctx = box()
    write_log(ctx, 'service-web.jsonl', [record('2026-07-04T12:%02d:00.000Z' % n, 'm%02d' % n) for n in range(60)])
    result = events(run_hb, ctx)
    assert messages(result)[-1] == 'm59' and 'm00' not in messages(result)
    assert result['skipped'] == 0, 'the cut first line is not counted as unreadable'
    assert any('read only the last' in note for note in result['partial'])


def test_a_long_message_is_cut_and_marked(box, run_hb):
    ctx = box()
    write_log(ctx, 'service-web.jsonl', [record('2026-07-04T12:00:01.000Z', 'y' * 10000)])
    event = events(run_hb, ctx)['events'][0]
    assert len(event['message']) == eventquery.MAX_MESSAGE and event['truncated'] is True


def test_the_box_token_never_appears_in_an_event(box, run_hb):
    ctx = box()
    write_log(ctx, 'service-web.jsonl', [record('2026-07-04T12:00:01.000Z', 'leaked %s here' % TOKEN,
                                                data={'note': TOKEN})])
    out = json.dumps(events(run_hb, ctx))
    assert TOKEN not in out and 'leaked [REDACTED] here' in out


def test_searching_for_part_of_the_token_finds_nothing(box, run_hb):
    ctx = box()
    write_log(ctx, 'service-web.jsonl', [record('2026-07-04T12:00:01.000Z', 'leaked %s here' % TOKEN)])
    assert events(run_hb, ctx, '--contains', TOKEN[10:30])['events'] == []


def test_a_symlinked_log_is_not_followed(box, run_hb, tmp_path):
    ctx = box()
    outside = tmp_path / 'outside.jsonl'
    outside.write_text(record('2026-07-04T12:00:01.000Z', 'outside') + '\n')
    os.makedirs(ctx.paths.logs)
    os.symlink(str(outside), os.path.join(ctx.paths.logs, 'service-web.jsonl'))
    assert events(run_hb, ctx)['events'] == []


@pytest.mark.parametrize('args', [
    ['--source', '../etc'], ['--source', 'service-'], ['--since', 'yesterday'], ['--level', 'loud'],
    ['--limit', '0'], ['--limit', str(eventquery.MAX_LIMIT + 1)], ['--limit'], ['--bogus', 'x'],
])
def test_wrong_arguments_are_a_usage_error(box, run_hb, args):
    code, _out, err = run_hb(box(), 'events', *args)
    assert code == 2 and 'events' in err


@pytest.mark.parametrize('value, expected', [
    ('2026-07-04T12:00:00Z', 1783166400.0),
    ('2026-07-04T12:00:00.500+00:00', 1783166400.5),
    ('2026-07-04T14:00:00+02:00', 1783166400.0),
    ('2026-07-04T12:00:00', 1783166400.0),
    (1783166400, 1783166400.0),
    (1783166400500, 1783166400.5),
    ('soon', None), (True, None), (None, None), ('2' * 100, None), (-5, None),
])
def test_times_are_read_from_iso_texts_and_epoch_numbers(value, expected):
    assert eventquery.parse_time(value) == expected
