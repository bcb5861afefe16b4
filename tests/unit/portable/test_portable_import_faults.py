# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An import the machine fails mid-way: a volume that fills, an engine that dies while it made its objects.

The engine is a stand-in here; tests/fleet/test_import_faults.py fills a real volume and kills a real engine.
"""

import pytest

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error
from ansible_collections.col_agents.tx9.plugins.module_utils._io import says_full
from ansible_collections.col_agents.tx9.plugins.module_utils._portable import import_faults

LOST = Tx9Error('The Docker engine stopped answering while trying to remove x: refused', 'DOCKER_UNAVAILABLE')


class Discard:
    """A discard that loses the engine the first `losses` times it runs."""

    def __init__(self, losses, error=LOST):
        self.losses = losses
        self.error = error
        self.runs = 0

    def __call__(self):
        self.runs += 1
        if self.runs <= self.losses:
            raise self.error


def test_tar_and_the_engine_saying_the_disk_is_full_are_read_as_full_in_any_case():
    assert says_full('tar: home/agent/x: Cannot write: No space left on device')
    assert says_full('copy file: write /var/lib/docker/volumes/v/_data/x: no space left on device')
    assert says_full('tar: x: Cannot write: Disk quota exceeded')
    assert not says_full('tar: x: Cannot open: Permission denied')


def test_what_an_import_made_is_removed_once_the_engine_that_died_answers_again():
    discard = Discard(losses=1)
    waits = []

    import_faults.discard_through_engine_loss(None, discard, wait=5, waiter=lambda c, w: waits.append(w) or True)

    assert discard.runs == 2 and waits == [5]


def test_an_engine_that_stays_away_leaves_what_was_made_and_says_so_with_docker_unavailable():
    discard = Discard(losses=1)

    with pytest.raises(Tx9Error) as caught:
        import_faults.discard_through_engine_loss(None, discard, wait=5, waiter=lambda c, w: False)

    assert caught.value.cause == 'DOCKER_UNAVAILABLE' and 'within 5 s' in caught.value.reason
    assert discard.runs == 1


def test_an_engine_that_refuses_the_removal_is_not_waited_for():
    refused = Tx9Error('Docker refused to remove x: in use', 'DOCKER_ERROR')
    discard = Discard(losses=1, error=refused)

    with pytest.raises(Tx9Error) as caught:
        import_faults.discard_through_engine_loss(None, discard, wait=5, waiter=lambda c, w: pytest.fail('waited'))

    assert caught.value is refused


def test_an_engine_lost_again_and_again_is_waited_for_a_bounded_number_of_times():
    discard = Discard(losses=100)

    with pytest.raises(Tx9Error):
        import_faults.discard_through_engine_loss(None, discard, wait=5, waiter=lambda c, w: True)

    assert discard.runs == import_faults.DISCARD_RETURNS + 1


class Engine:
    """Records removals; holds an import stage of dev and a restore container of dev."""

    def __init__(self):
        self.removed = []

    def inspect_volume(self, name):
        return {'Name': name, 'Labels': {'tx9.import-stage': 'dev'}}

    def remove_volume(self, name, force=False):
        self.removed.append(('volume', name))

    def containers(self, all=False, filters=None):
        assert 'tx9.role=restore' in filters['label'] and 'tx9.box=dev' in filters['label']
        return [{'Id': 'restore-id'}]

    def remove_container(self, container, force=False):
        self.removed.append(('container', container))


class Client:
    def __init__(self):
        self.api = Engine()


def test_an_import_that_fails_before_its_payload_is_whole_leaves_the_copy_it_replaces_as_it_was(monkeypatch):
    from ansible_collections.col_agents.tx9.plugins.module_utils._portable import importer

    client = Client()
    job = importer.Import(client, None, '/x.tx9', {})
    job.kept_copy = True
    monkeypatch.setattr(importer, 'remove_labelled', lambda *_args: pytest.fail('the copy was removed'))

    job.undo('dev')

    assert client.api.removed == [('container', 'restore-id'), ('volume', 'tx9-dev-import-stage')]
