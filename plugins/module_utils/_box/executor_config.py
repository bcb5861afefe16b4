# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Executor exposure options of a box: public origin, publish address, DNS, allowed hosts.

Private to the col_agents.tx9 collection. Resolved values persist per box so
every recreate keeps them; clear_executor_config returns to the default
(all interfaces, a port Docker picks).
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

HOST_NAME = re.compile(
    r'^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z'
)
ORIGIN = re.compile(r'^(https?)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?\Z')

# Option name -> state file key
EXECUTOR_OPTIONS = (
    ('executor_web_base_url', 'TX9_EXECUTOR_WEB_BASE_URL'),
    ('executor_publish', 'TX9_EXECUTOR_PUBLISH'),
    ('executor_dns', 'TX9_EXECUTOR_DNS'),
    ('executor_allowed_hosts', 'TX9_EXECUTOR_ALLOWED_HOSTS'),
)
LIST_OPTIONS = ('executor_dns', 'executor_allowed_hosts')


def _invalid(option: str, value: object, why: str, fix: str) -> Tx9Error:
    return Tx9Error(f'{option}={value!r} is not valid: {why}.', 'INVALID_ARGUMENT', fix)


def parse_web_base_url(value: str | None) -> tuple[str, str]:
    """An http(s) origin without a trailing slash or path; returns (url, host)."""
    match = ORIGIN.match(value or '')
    if not match:
        raise _invalid(
            'executor_web_base_url',
            value,
            'it must be an http or https origin with no path',
            'Give an origin such as https://box.example.ts.net (no trailing slash).',
        )
    port = match.group(3)
    if port is not None and not 1 <= int(port) <= 65535:
        raise _invalid('executor_web_base_url', value, 'the port must be 1 to 65535', 'Fix the port.')
    return match.group(0), match.group(2).strip('[]')


def parse_publish(value: str | int | None) -> tuple[str, str]:
    """'ADDR:PORT' or 'PORT' -> (address, port string); empty -> all interfaces, dynamic port."""
    if value in (None, ''):
        return '0.0.0.0', ''
    text = str(value)
    address, _sep, port = text.rpartition(':')
    address = address or '0.0.0.0'
    try:
        ipaddress.IPv4Address(address)
    except ValueError:
        raise _invalid(
            'executor_publish',
            value,
            f'{address!r} is not an IPv4 address',
            'Give ADDR:PORT such as 127.0.0.1:4788, or a PORT alone.',
        )
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise _invalid(
            'executor_publish',
            value,
            'the port must be 1 to 65535',
            'Give ADDR:PORT such as 127.0.0.1:4788, or a PORT alone.',
        )
    return address, port


def parse_dns(values: Iterable[str] | None) -> list[str]:
    found: list[str] = []
    for value in values or []:
        try:
            ipaddress.IPv4Address(value)
        except ValueError:
            raise _invalid('executor_dns', value, 'it is not an IPv4 address', 'Give IPv4 addresses such as 1.1.1.1.')
        if value not in found:
            found.append(value)
    return found


def parse_allowed_hosts(values: Iterable[str] | None) -> list[str]:
    found: list[str] = []
    for value in values or []:
        if not HOST_NAME.match(value):
            try:
                ipaddress.ip_address(value)
            except ValueError:
                raise _invalid(
                    'executor_allowed_hosts',
                    value,
                    'it is not a host name or IP address',
                    'Give host names such as box.example.net.',
                )
        if value not in found:
            found.append(value)
    return found


def _given(params: Mapping[str, Any], option: str) -> bool:
    value = params.get(option)
    return value is not None


def resolve(params: Mapping[str, Any], persisted: Mapping[str, str]) -> dict[str, Any]:
    """The executor options: given, else persisted, else the defaults."""
    given = [option for option, _key in EXECUTOR_OPTIONS if _given(params, option)]
    if params.get('clear_executor_config'):
        if given:
            raise Tx9Error(
                f'clear_executor_config cannot be combined with {", ".join(given)}.',
                'INVALID_ARGUMENT',
                'Either clear the executor options or set them, not both.',
            )
        persisted = {}
    values: dict[str, Any] = {}
    for option, key in EXECUTOR_OPTIONS:
        if _given(params, option):
            value = params[option]
        elif option in LIST_OPTIONS:
            value = [v for v in persisted.get(key, '').split(',') if v]
        else:
            value = persisted.get(key) or None
        values[option] = value
    if values['executor_web_base_url']:
        parse_web_base_url(values['executor_web_base_url'])
    parse_publish(values['executor_publish'])
    values['executor_dns'] = parse_dns(values['executor_dns'])
    values['executor_allowed_hosts'] = parse_allowed_hosts(values['executor_allowed_hosts'])
    return values


def to_state(values: Mapping[str, Any]) -> dict[str, str]:
    state: dict[str, str] = {}
    for option, key in EXECUTOR_OPTIONS:
        value: Any = values.get(option)
        state[key] = ','.join(value) if option in LIST_OPTIONS else (value or '')
    return state


def outbound_ipv4() -> str | None:
    """The address this host uses to reach other hosts, or None."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(('192.0.2.1', 9))  # a documentation address: nothing is sent
        address: str = probe.getsockname()[0]
        return address
    except OSError:
        return None
    finally:
        probe.close()


def url_host_for(address: str | None) -> str:
    """The host name a person uses to reach a port published on address."""
    if address and address not in ('0.0.0.0', '::'):
        return address
    return os.environ.get('TX9_URL_HOST') or outbound_ipv4() or '127.0.0.1'


def dashboard_host(executor_values: Mapping[str, Any]) -> str:
    """The host name a person uses to reach the dashboard, without the token."""
    return url_host_for(parse_publish(executor_values.get('executor_publish'))[0])


def allowed_hosts(executor_values: Mapping[str, Any], url_host: str) -> list[str]:
    """Host names Executor must accept in the Host header, beyond executor and localhost."""
    hosts: list[str] = []
    if executor_values.get('executor_web_base_url'):
        hosts.append(parse_web_base_url(executor_values['executor_web_base_url'])[1])
    hosts.append(url_host)
    hosts.extend(executor_values.get('executor_allowed_hosts') or [])
    found: list[str] = []
    for host in hosts:
        if host and host not in found and host not in ('executor', 'localhost', '127.0.0.1'):
            found.append(host)
    return found
