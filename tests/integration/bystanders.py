# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a person may already have on the engine the suite runs on, and a check that the suite left it alone.

A box named t1 (its network, two volumes and two containers, labelled as
tx9_box labels them, with a file in its /data) and an unused image
tx9-box:0.0.9. Each is planted only when the engine has none: a person's own
t1 or tx9-box:0.0.9 is never touched, only compared. Planted objects carry
the label tx9.test=bystander as well, so a later run knows them as its own
(and replants them) when a run was killed before it could remove them.

Runs side by side on one engine share the planted objects: each holds a shared
lock on SHARED_LOCK while it runs; only a run that holds it alone clears marked
leftovers and plants, and only the last one out removes what was planted.

The planted containers are made from a tiny image of an empty tar and never
started, so planting needs neither the box image nor any time.
"""

import fcntl
import io
import json
import tarfile
import uuid

import docker

from ansible_collections.col_agents.tx9.plugins.module_utils._names import (
    LABEL_BOX, LABEL_OWNER, LABEL_VERSION, ROLE_AGENT, ROLE_EXECUTOR, box_labels, object_names)

BOX = 't1'
IMAGE = 'tx9-box:0.0.9'
MARK = {'tx9.test': 'bystander'}
DATA_FILE = 'bystander-notes.txt'
SHARED_LOCK = '/tmp/tx9-it-bystanders.lock'


def tiny_image(client, labels, repository=None, tag=None):
    """The id of a new image with an empty file system and these labels (tagged repository:tag when given)."""
    empty = io.BytesIO()
    tarfile.open(fileobj=empty, mode='w').close()
    changes = ['LABEL %s' % ' '.join('%s=%s' % (key, json.dumps(value)) for key, value in sorted(labels.items())),
               'CMD ["/nothing-to-run"]']
    reply = client.api.import_image_from_data(empty.getvalue(), repository=repository, tag=tag, changes=changes)
    return json.loads(reply.strip().splitlines()[-1])['status']


def one_file_tar(name, data):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w') as tar:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def read_file(client, container, path):
    """The bytes of one file in a container (started or not), or None when it is not there."""
    try:
        stream, _stat = client.api.get_archive(container, path)
    except docker.errors.NotFound:
        return None
    with tarfile.open(fileobj=io.BytesIO(b''.join(stream))) as tar:
        return tar.extractfile(tar.getmembers()[0]).read()


def marked(labels):
    return all((labels or {}).get(key) == value for key, value in MARK.items())


class Bystanders:
    """The box t1 and the image tx9-box:0.0.9: planted when absent, compared at the end of the run."""

    def __init__(self, client, box=BOX, image=IMAGE):
        self.client = client
        self.box = box
        self.image = image
        self.names = object_names(box)
        self.planted_box = False
        self.planted_image = False
        self.container_image = None
        self.before = None

    # What is there.

    def box_objects(self):
        """{'container NAME' | 'network NAME' | 'volume NAME': attributes} of every object named for or labelled with the box."""
        api = self.client.api
        label = {'label': '%s=%s' % (LABEL_BOX, self.box)}
        found = {}
        containers = set(c['Id'] for c in api.containers(all=True, filters=label))
        containers.update(self.existing(api.inspect_container, self.names[role])
                          for role in (ROLE_AGENT, ROLE_EXECUTOR))
        for ref in containers - {None}:
            attrs = api.inspect_container(ref)
            found['container ' + attrs['Name'].lstrip('/')] = dict(
                id=attrs['Id'], image=attrs['Image'], status=attrs['State']['Status'],
                started=attrs['State']['StartedAt'], labels=attrs['Config']['Labels'],
                mounts=sorted(m.get('Name') or m.get('Source') for m in attrs['Mounts']))
        networks = set(n['Id'] for n in api.networks(filters=label))
        networks.add(self.existing(api.inspect_network, self.names['network']))
        for ref in networks - {None}:
            attrs = api.inspect_network(ref)
            found['network ' + attrs['Name']] = dict(id=attrs['Id'], labels=attrs['Labels'])
        volumes = set(v['Name'] for v in api.volumes(filters=label).get('Volumes') or [])
        volumes.update(self.existing(api.inspect_volume, self.names[role + '_volume'])
                       for role in (ROLE_AGENT, ROLE_EXECUTOR))
        for ref in volumes - {None}:
            attrs = api.inspect_volume(ref)
            found['volume ' + attrs['Name']] = dict(created=attrs['CreatedAt'], labels=attrs['Labels'])
        return found

    @staticmethod
    def existing(inspect, name):
        """name when inspect finds it, else None."""
        try:
            inspect(name)
        except docker.errors.NotFound:
            return None
        return name

    def image_state(self):
        try:
            attrs = self.client.api.inspect_image(self.image)
        except docker.errors.ImageNotFound:
            return None
        return dict(id=attrs['Id'], tags=sorted(attrs['RepoTags'] or []), labels=attrs['Config']['Labels'])

    def snapshot(self):
        objects = self.box_objects()
        state = dict(box=objects, image=self.image_state())
        if objects and all(marked(attrs['labels']) for attrs in objects.values()):
            state['data'] = read_file(self.client, self.names['agent'], '/data/' + DATA_FILE)
        return state

    # Planting and removing.

    def __enter__(self):
        """Take the shared lock (planting first when this run is alone) and snapshot."""
        self.lock = open(SHARED_LOCK, 'a+')
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            alone = True
        except BlockingIOError:
            alone = False
        if alone:
            self.plant()
            fcntl.flock(self.lock, fcntl.LOCK_SH)
        else:
            fcntl.flock(self.lock, fcntl.LOCK_SH)
            image = self.image_state()
            self.planted_image = image is not None and marked(image['labels'])
            self.before = self.snapshot()
        return self

    def __exit__(self, *exc_info):
        """The last run out removes what was planted; one that is not last leaves it for the others."""
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.lock.close()
            return
        try:
            self.remove_planted()
        finally:
            self.lock.close()

    def plant(self):
        objects = self.box_objects()
        if objects and all(marked(attrs['labels']) for attrs in objects.values()):
            self.remove_box()  # left by an earlier run that was killed
            objects = {}
        if not objects:
            self.plant_box()
        image = self.image_state()
        if image is None:
            labels = dict(MARK, **{LABEL_OWNER: '1', LABEL_VERSION: self.image.split(':')[1]})
            tiny_image(self.client, labels, *self.image.split(':'))
            image = self.image_state()
        self.planted_image = marked(image['labels'])
        self.before = self.snapshot()

    def plant_box(self):
        api = self.client.api
        self.planted_box = True
        self.container_image = tiny_image(self.client, MARK)
        api.create_network(self.names['network'], driver='bridge', labels=dict(box_labels(self.box), **MARK))
        for role in (ROLE_AGENT, ROLE_EXECUTOR):
            volume = self.names[role + '_volume']
            api.create_volume(name=volume, driver='local', labels=dict(box_labels(self.box, role), **MARK))
            api.create_container(
                self.container_image, name=self.names[role], labels=dict(box_labels(self.box, role), **MARK),
                host_config=api.create_host_config(init=True, binds={volume: {'bind': '/data', 'mode': 'rw'}}),
                networking_config=api.create_networking_config(
                    {self.names['network']: api.create_endpoint_config(aliases=[role])}))
        notes = ('notes of box %s, %s\n' % (self.box, uuid.uuid4().hex)).encode('utf-8')
        api.put_archive(self.names['agent'], '/data', one_file_tar(DATA_FILE, notes))

    def remove_box(self):
        """Remove the box's objects that carry the mark (and the image their containers were made from)."""
        api = self.client.api
        objects = self.box_objects()
        images = set()
        for key, attrs in sorted(objects.items()):
            kind, name = key.split(' ', 1)
            if not marked(attrs['labels']):
                continue
            if kind == 'container':
                images.add(attrs['image'])
                api.remove_container(attrs['id'], force=True)
        for key, attrs in sorted(objects.items()):
            kind, name = key.split(' ', 1)
            if marked(attrs['labels']) and kind == 'network':
                api.remove_network(attrs['id'])
            elif marked(attrs['labels']) and kind == 'volume':
                api.remove_volume(name, force=True)
        for image in images | ({self.container_image} - {None}):
            try:
                if marked(api.inspect_image(image)['Config']['Labels']):
                    api.remove_image(image, force=True)
            except docker.errors.ImageNotFound:
                pass

    def remove_planted(self):
        """Remove the marked box objects and image: planted by this run or by runs that ran beside it."""
        self.remove_box()
        image = self.image_state()
        if image is not None and marked(image['labels']):
            self.client.api.remove_image(self.image)

    # The check.

    def changes(self):
        """What differs from when the run began, one line each; [] when nothing does."""
        after = self.snapshot()
        changed = []
        before_box, after_box = self.before['box'], after['box']
        for key in sorted(set(before_box) | set(after_box)):
            if key not in after_box:
                changed.append('%s of box %s is gone' % (key, self.box))
            elif key not in before_box:
                changed.append('%s of box %s appeared' % (key, self.box))
            elif before_box[key] != after_box[key]:
                changed.append('%s of box %s changed: %s -> %s' % (key, self.box, before_box[key], after_box[key]))
        if self.before['image'] != after['image']:
            changed.append('image %s changed: %s -> %s' % (self.image, self.before['image'], after['image']))
        if self.before.get('data') != after.get('data'):
            changed.append('/data/%s of box %s changed: %r -> %r' % (DATA_FILE, self.box, self.before.get('data'),
                                                                     after.get('data')))
        return changed
