# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tx9_logs export bundle: what goes in, the token taken out, mode 0600, never overwriting."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pathlib
import stat
import tarfile
from collections.abc import Iterator
from typing import Any

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._box.objects import BoxObjects
from ansible_collections.col_agents.tx9.plugins.module_utils._ops import logbundle
from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

TOKEN = 'd' * 64


def tar_of(files: dict[str, bytes], links: list[tuple[str, str]] | tuple[()] = ()) -> bytes:
    """Docker's copy of a /data/logs directory: a tar whose members start with logs/."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w', format=tarfile.GNU_FORMAT) as tar:
        directory = tarfile.TarInfo('logs')
        directory.type = tarfile.DIRTYPE
        directory.mode = 0o700
        tar.addfile(directory)
        for name, data in files.items():
            info = tarfile.TarInfo('logs/' + name)
            info.size = len(data)
            info.mode = 0o600
            info.mtime = 1783166400
            tar.addfile(info, io.BytesIO(data))
        for name, target in links:
            info = tarfile.TarInfo('logs/' + name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return buf.getvalue()


class Api:
    """get_archive as the Docker SDK answers it: a stream of chunks and a stat dict."""

    def __init__(self, archives: dict[str, bytes]) -> None:
        self.archives = archives

    def get_archive(self, container: str, path: str) -> tuple[Iterator[bytes], dict[str, Any]]:
        assert path == '/data/logs'
        data = self.archives[container]
        return (data[i:i + 1000] for i in range(0, len(data), 1000)), {}


class Client:
    def __init__(self, archives: dict[str, bytes]) -> None:
        self.api = Api(archives)


class Objects(BoxObjects):
    box = 'dev'
    names = dict(agent='tx9-dev-agent', executor='tx9-dev-executor')

    def __init__(self, executor: bool = True) -> None:
        self.containers = dict(agent={'Id': 'agent-id'}, executor={'Id': 'executor-id'} if executor else None)


AGENT_LOGS = {
    'agent.jsonl': b'{"message": "loop"}\n',
    'service-web.jsonl.1': b'{"message": "token ' + TOKEN.encode() + b' leaked"}\n',
    'notes.txt': b'not a log',
}
EXECUTOR_LOGS = {'executor.jsonl': b'{"message": "executor up"}\n'}


def export(
    tmp_path: pathlib.Path, executor: bool = True, agent_logs: dict[str, bytes] | None = None
) -> tuple[dict[str, Any], str]:
    client = Client({'agent-id': tar_of(agent_logs or AGENT_LOGS, links=[('linked.jsonl', '/etc/passwd')]),
                     'executor-id': tar_of(EXECUTOR_LOGS)})
    path = str(tmp_path / 'dev-logs.tar.gz')
    return logbundle.export_logs(client, Objects(executor), TOKEN, path), path


def members(path: str) -> dict[str, bytes]:
    """Each member of the bundle and its bytes; the bundle holds regular files only."""
    found: dict[str, bytes] = {}
    with tarfile.open(path, 'r:gz') as tar:
        for m in tar.getmembers():
            handle = tar.extractfile(m)
            assert m.isfile() and handle is not None, m.name
            found[m.name] = handle.read()
    return found


def test_the_bundle_holds_both_volumes_logs_and_a_manifest(tmp_path: pathlib.Path) -> None:
    result, path = export(tmp_path)
    found = members(path)
    assert sorted(found) == ['tx9-dev-logs/agent/agent.jsonl', 'tx9-dev-logs/agent/service-web.jsonl.1',
                             'tx9-dev-logs/executor/executor.jsonl', 'tx9-dev-logs/manifest.json']
    assert found['tx9-dev-logs/executor/executor.jsonl'] == EXECUTOR_LOGS['executor.jsonl']
    manifest = json.loads(found['tx9-dev-logs/manifest.json'])
    assert manifest['schema'] == 'tx9.logbundle.v1' and manifest['box'] == 'dev'
    entry = [f for f in manifest['files'] if f['name'] == 'agent.jsonl'][0]
    assert entry == dict(volume='agent', name='agent.jsonl', size=len(AGENT_LOGS['agent.jsonl']),
                         sha256=hashlib.sha256(AGENT_LOGS['agent.jsonl']).hexdigest())
    assert manifest['left_out'] == [dict(volume='agent', name='logs/notes.txt', reason='not a tx9 log file name')]
    assert result == dict(changed=True, export=dict(path=path, size=os.stat(path).st_size, files=3,
                                                    left_out=manifest['left_out']))


def test_the_bundle_is_mode_0600_and_never_carries_the_token(tmp_path: pathlib.Path) -> None:
    _result, path = export(tmp_path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    found = members(path)
    assert b'token [REDACTED] leaked' in found['tx9-dev-logs/agent/service-web.jsonl.1']
    assert not any(TOKEN.encode() in data for data in found.values())


def test_a_second_export_to_the_same_path_fails_and_keeps_the_first(tmp_path: pathlib.Path) -> None:
    _result, path = export(tmp_path)
    before = open(path, 'rb').read()
    with pytest.raises(Tx9Error) as caught:
        export(tmp_path)
    assert caught.value.cause == 'DEST_EXISTS'
    assert open(path, 'rb').read() == before
    assert os.listdir(str(tmp_path)) == ['dev-logs.tar.gz'], 'no staging file is left behind'


def test_check_mode_writes_nothing_but_still_refuses_an_existing_path(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / 'b.tar.gz')
    result = logbundle.export_logs(None, Objects(), TOKEN, path, check_mode=True)
    assert result['changed'] is True and result['export']['path'] == path and not os.path.exists(path)
    open(path, 'w').close()
    with pytest.raises(Tx9Error) as caught:
        logbundle.export_logs(None, Objects(), TOKEN, path, check_mode=True)
    assert caught.value.cause == 'DEST_EXISTS'


@pytest.mark.parametrize('check_mode', [False, True])
def test_an_export_path_below_an_existing_file_is_refused_as_not_a_directory(tmp_path: pathlib.Path, check_mode: bool) -> None:
    blocker = tmp_path / 'logs'
    blocker.write_bytes(b'')
    with pytest.raises(Tx9Error) as caught:
        logbundle.export_logs(None, Objects(), TOKEN, str(blocker / 'b.tar.gz'), check_mode=check_mode)
    assert caught.value.cause == 'ARCHIVE_WRITE_FAILED'
    assert caught.value.reason == 'The export directory %s (export_path) is not a directory: it is a file.' % blocker
    assert caught.value.fix == 'Give export_path a path in a directory, or move %s away.' % blocker


def test_a_missing_executor_container_is_listed_as_left_out(tmp_path: pathlib.Path) -> None:
    result, path = export(tmp_path, executor=False)
    assert dict(volume='executor', name=None, reason='the executor container is missing') in result['export']['left_out']
    assert not any(name.startswith('tx9-dev-logs/executor/') for name in members(path))


def test_a_file_over_the_member_bound_is_left_out_and_listed(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logbundle, 'MAX_MEMBER_BYTES', 10)
    result, path = export(tmp_path)
    assert 'tx9-dev-logs/agent/service-web.jsonl.1' not in members(path)
    assert dict(volume='agent', name='logs/service-web.jsonl.1', reason='larger than 10 bytes') in result['export']['left_out']


@pytest.mark.parametrize('chunk', [1, 7, 63, 64, 65, 1000])
def test_the_token_is_replaced_even_where_it_spans_two_chunks(chunk: int) -> None:
    data = b'a' + TOKEN.encode() + b'b' * 100 + TOKEN.encode() + TOKEN.encode() + b'end'
    chunks = [data[i:i + chunk] for i in range(0, len(data), chunk)]
    assert b''.join(logbundle.scrub_chunks(chunks, TOKEN)) == b'a[REDACTED]' + b'b' * 100 + b'[REDACTED][REDACTED]end'


def test_without_a_token_the_bytes_pass_unchanged() -> None:
    assert b''.join(logbundle.scrub_chunks([b'ab', b'cd'], None)) == b'abcd'
