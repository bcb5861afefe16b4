# -*- coding: utf-8 -*-
# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A real agent + executor container pair, wired the way tx9's box module wires one.

Shared by the guest runtime integration tests. Object names start with
TX9_IT_PREFIX (default tx9-guest-it-), so parallel users of one engine can
keep theirs apart; every object is labelled tx9.test=guest-runtime.
"""


import json
import os
import secrets
import time
import urllib.error
import urllib.request
import uuid

import docker

PORT = 4788
PREFIX = os.environ.get('TX9_IT_PREFIX') or 'tx9-guest-it-'
LABELS = {'tx9.test': 'guest-runtime'}
INITIALIZE = json.dumps({
    'jsonrpc': '2.0', 'id': 1, 'method': 'initialize',
    'params': {'protocolVersion': '2025-03-26', 'capabilities': {},
               'clientInfo': {'name': 'tx9-it', 'version': '1'}},
}).encode()
SYSCTLS = {'net.ipv6.conf.all.disable_ipv6': '1'}


def unique_name():
    return '%s%s' % (PREFIX, uuid.uuid4().hex[:8])


def create(client, image, name, network, alias, env, volume, entrypoint=None, publish=False):
    """A container wired like the box module's: --init, IPv6 off, /data volume, one alias."""
    api = client.api
    host_config = api.create_host_config(
        init=True, sysctls=SYSCTLS, binds={volume: {'bind': '/data', 'mode': 'rw'}},
        port_bindings={PORT: ('127.0.0.1', None)} if publish else None)
    created = api.create_container(
        image, name=name, environment=env, entrypoint=entrypoint, host_config=host_config,
        ports=[PORT] if publish else None, labels=LABELS,
        networking_config=api.create_networking_config({network: api.create_endpoint_config(aliases=[alias])}))
    return client.containers.get(created['Id'])


class Box:
    """A box's network, two volumes and two containers; agent_env adds to the agent's environment."""

    def __init__(self, client, image, agent_env=None, name=None, agent_volume=None):
        self.client = client
        self.image = image
        self.name = name or unique_name()
        self.token = secrets.token_hex(32)
        self.agent_env = dict(agent_env or {})
        self.network = None
        self.agent = None
        self.executor = None
        self.host_port = None
        self.volumes = [agent_volume or '%s-agent-data' % self.name, '%s-exec-data' % self.name]

    def start(self):
        self.network = self.client.networks.create(self.name, driver='bridge', labels=LABELS)
        for volume in self.volumes:
            try:
                self.client.volumes.get(volume)
            except docker.errors.NotFound:
                self.client.volumes.create(volume, labels=LABELS)
        self.executor = create(
            self.client, self.image, self.name + '-executor', self.name, 'executor',
            {'EXECUTOR_MCP_TOKEN': self.token, 'TX9_BOX_NAME': self.name, 'TX9_EXECUTOR_ALLOWED_HOSTS': ''},
            self.volumes[1], entrypoint=['/opt/tx9/bin/tx9-executor-entrypoint'], publish=True)
        env = {'EXECUTOR_HOST': 'executor', 'BOXD_EXECUTOR_TOKEN': self.token,
               'BOX_EXECUTOR_BRIDGE_PORT': str(PORT), 'TX9_BOX_NAME': self.name}
        env.update(self.agent_env)
        self.agent = create(self.client, self.image, self.name + '-agent', self.name, 'agent', env, self.volumes[0])
        self.executor.start()
        self.agent.start()
        self.executor.reload()
        self.host_port = int(self.executor.ports['%d/tcp' % PORT][0]['HostPort'])

    def remove(self):
        for container in (self.agent, self.executor):
            if container is not None:
                try:
                    container.remove(force=True)
                except docker.errors.NotFound:
                    pass
        if self.network is not None:
            self.network.remove()
        for volume in self.volumes:
            try:
                self.client.volumes.get(volume).remove(force=True)
            except docker.errors.NotFound:
                pass

    def run(self, container, argv, user='agent'):
        """(exit code, output) of a command in one of the box's containers."""
        result = container.exec_run(argv, user=user, demux=False)
        return result.exit_code, result.output.decode('utf-8', 'replace')

    def hb(self, *args, **kwargs):
        return self.run(self.agent, ['/opt/tx9/bin/hb'] + list(args), **kwargs)

    def status(self):
        code, out = self.hb('status', '--json')
        assert code == 0, out
        return json.loads(out.strip().splitlines()[-1])


def post_initialize(port, token=None):
    headers = {'Content-Type': 'application/json', 'Accept': 'application/json, text/event-stream'}
    if token:
        headers['Authorization'] = 'Bearer ' + token
    request = urllib.request.Request('http://127.0.0.1:%d/mcp' % port, data=INITIALIZE, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def eventually(check, timeout=240, interval=1.0):
    """check()'s first truthy result, retrying through Executor's boot window.

    Timeouts are generous, for a loaded two-core machine: a check that holds
    returns at once, and how fast things happen is measured by tests/bench.
    """
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            last = check()
            if last:
                return last
        except (OSError, ValueError, AssertionError) as error:
            last = error
        time.sleep(interval)
    raise AssertionError('gave up after %ds; last result: %r' % (timeout, last))
