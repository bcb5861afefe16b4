# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules of a box's egress policy: one entry of a list, read, checked and normalised.

Private to the col_agents.tx9 collection. egress.py reads the whole `egress`
option and renders it; this module reads the entries of its lists. An entry is
a host name (api.anthropic.com), a wildcard (*.githubusercontent.com: the
domain's subdomains and, as Squid's `.domain` does, the domain itself), an
IPv4 address or CIDR (10.0.0.1, 10.0.0.0/8), an IPv6 address or CIDR in
brackets ([2001:db8::1], [2001:db8::/32]) or a preset (preset:tools). Each but
a preset may name its ports after a colon (host:443, host:80,443,
[2001:db8::1]:443, 10.0.0.0/8:8443); without ports it means port 443 only. The
mapping form {host: ..., ports: [...]} says the same. Every value is checked
before any work proportional to its size, and every refusal names the entry,
why, and what to write instead.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import reprlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from ansible_collections.col_agents.tx9.plugins.module_utils._errors import Tx9Error

CAUSE = 'EGRESS_POLICY_INVALID'
DEFAULT_PORTS = (443,)
MAX_ENTRIES = 256  # per list
MAX_ENTRY_CHARS = 300
MAX_PORTS = 32  # per entry
MAX_NAME = 253
LABEL = re.compile(r'[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?')
LABEL_CHARACTERS = re.compile(r'[a-z0-9-]+')
IPV4_LIKE = re.compile(r'[0-9./]+')
IPV6_CHARACTERS = re.compile(r'[0-9a-f:./]+')
PORT = re.compile(r'[0-9]{1,5}')
ENTRY_KEYS = ('host', 'ports')

# The endpoints the box's own tools need, in one place; `allow: [preset:tools]` lets them out (port 443).
# Only what can be justified is listed:
# - Claude Code: its API. Anthropic's own firewall for Claude Code's devcontainer also opens statsig.anthropic.com,
#   statsig.com and sentry.io; those carry telemetry and error reports, which Claude Code does without
#   (CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1), and sentry.io accepts reports for anyone's project, so they are
#   left out. The hosts of a Claude subscription sign-in are not verified for the pinned version and are left out.
# - Codex: the OpenAI API (API keys), ChatGPT's backend (ChatGPT sign-in) and the sign-in's token service.
# - Hermes: installed from PyPI (below); the model provider it talks to is the owner's choice, and the image's
#   assets name no endpoint of its own, so none is listed.
# - npm (Claude Code, Codex, Executor and project packages) and PyPI (Hermes and project packages: the index and
#   the files it points to).
# - GitHub: clones and fetches over HTTPS, archives (codeload), raw files and release assets (githubusercontent).
PRESETS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        'tools': (
            'api.anthropic.com',
            'api.openai.com',
            'chatgpt.com',
            'auth.openai.com',
            'registry.npmjs.org',
            'pypi.org',
            'files.pythonhosted.org',
            'github.com',
            'codeload.github.com',
            '*.githubusercontent.com',
        ),
    }
)


@dataclass(frozen=True)
class Rule:
    """One normalised rule.

    kind is 'name' (one host), 'domain' (a wildcard: the domain and its subdomains) or 'net' (an IP network);
    target is the host name, the domain without '*.', or the network with its prefix length; ports are sorted
    and distinct; preset names the preset the rule came from ('' when written directly).
    """

    kind: str
    target: str
    ports: tuple[int, ...]
    preset: str = ''

    @property
    def host(self) -> str:
        """The host part as an entry writes it: api.x.com, *.x.com, 10.0.0.0/8, 10.0.0.1, [2001:db8::1]."""
        if self.kind == 'domain':
            return f'*.{self.target}'
        if self.kind == 'name':
            return self.target
        network = as_network(self.target)
        text = str(network.network_address) if network.prefixlen == network.max_prefixlen else self.target
        return f'[{text}]' if network.version == 6 else text

    @property
    def text(self) -> str:
        """The rule as an entry: host:ports."""
        return f'{self.host}:{",".join(str(port) for port in self.ports)}'

    @property
    def label(self) -> str:
        """The rule's name in logs and diffs: its text, after preset:NAME/ when a preset brought it."""
        return f'preset:{self.preset}/{self.text}' if self.preset else self.text


SHOWN = reprlib.Repr()
SHOWN.maxstring = SHOWN.maxother = 80
SHOWN.maxlevel = 2


@functools.lru_cache(maxsize=1024)
def as_network(target: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    return ipaddress.ip_network(target)


def shown(value: object) -> str:
    """value for a message, cut short: a refusal costs no work in proportion to the value refused."""
    if isinstance(value, str) and len(value) > 80:
        return repr(value[:77]) + '...'
    try:
        return SHOWN.repr(value)
    except ValueError:  # an int too long to print
        return '<too long to show>'


def refuse(where: str, value: object, why: str, fix: str) -> Tx9Error:
    return Tx9Error(f'{where}={shown(value)} is not valid: {why}.', CAUSE, fix)


def as_list(value: object, where: str) -> list[object]:
    """value when it is a list (or tuple) of at most MAX_ENTRIES items."""
    if not isinstance(value, list | tuple):
        key = where.rsplit('.', 1)[-1]
        raise refuse(where, value, 'it is not a list', f'Write a list, such as {key}: [{shown(value)}].')
    if len(value) > MAX_ENTRIES:
        raise refuse(
            where,
            f'<{len(value)} entries>',
            f'it has {len(value)} entries, more than the {MAX_ENTRIES} a list may hold',
            'Cover many hosts with a wildcard (*.example.com) or a CIDR (10.0.0.0/8).',
        )
    return list(value)


def parse_port(value: object, where: str, entry: object) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return value
    if isinstance(value, str) and PORT.fullmatch(value) and 1 <= int(value) <= 65535:
        return int(value)
    raise refuse(
        where,
        entry,
        f'the port {shown(value)} is not a number from 1 to 65535',
        'Give a port such as 443, or several as host:80,443 (ranges are not supported).',
    )


def parse_ports(values: Iterable[object], where: str, entry: object) -> tuple[int, ...]:
    items = list(values)
    if not items:
        raise refuse(where, entry, 'it names no port', 'Leave the ports out for 443, or give some, such as 443.')
    if len(items) > MAX_PORTS:
        raise refuse(where, entry, f'it names more than {MAX_PORTS} ports', 'Split it into several entries.')
    return tuple(sorted(set(parse_port(item, where, entry) for item in items)))


def split_ports(text: str, where: str) -> tuple[str, tuple[int, ...] | None, bool]:
    """(host, ports or None, whether the host was in brackets) of an entry's text."""
    if text.startswith('['):
        end = text.find(']')
        if end < 0:
            raise refuse(where, text, 'its "[" is never closed', 'Write an IPv6 address as [2001:db8::1]:443.')
        host, rest = text[1:end], text[end + 1 :]
        if rest and not rest.startswith(':'):
            raise refuse(where, text, 'only ports may follow "]"', 'Write an IPv6 entry as [2001:db8::1]:443.')
        return host, (parse_ports(rest[1:].split(','), where, text) if rest else None), True
    if text.count(':') > 1:
        raise refuse(
            where,
            text,
            'an IPv6 address must stand in brackets, or its last group could be read as a port',
            'Write it as [2001:db8::1] or, with ports, [2001:db8::1]:443.',
        )
    host, colon, rest = text.partition(':')
    return host, (parse_ports(rest.split(','), where, text) if colon else None), False


def parse_network(host: str, version: int, where: str, entry: object) -> str:
    """The network's text with its prefix length (10.0.0.1 -> 10.0.0.1/32)."""
    try:
        network = ipaddress.ip_network(host, strict=True)
    except ValueError as exc:
        if 'host bits set' in str(exc):
            loose = ipaddress.ip_network(host, strict=False)
            raise refuse(
                where,
                entry,
                f'{host} has host bits set, so it names no network',
                f'Write the network {loose} or the one address {host.split("/")[0]}.',
            )
        raise refuse(where, entry, f'{host} is not an IPv{version} address or network', 'Give one such as 10.0.0.0/8.')
    if network.version != version:
        raise refuse(where, entry, f'{host} is not an IPv{version} address', 'Write IPv6 in brackets, IPv4 without.')
    return network.with_prefixlen


def check_label(label: str, where: str, entry: object) -> None:
    if not label:
        raise refuse(where, entry, 'it has an empty label (two dots together, or a dot at an end)', 'Drop the dot.')
    if len(label) > 63:
        raise refuse(
            where, entry, f'the label {shown(label)} is longer than 63 characters', 'Give the host name as DNS has it.'
        )
    if not LABEL_CHARACTERS.fullmatch(label):
        raise refuse(
            where,
            entry,
            f'the label {label!r} has a character other than a-z, 0-9 and "-"',
            'Give a host name such as api.example.com; write an international name in its xn-- form.',
        )
    if not LABEL.fullmatch(label):
        raise refuse(
            where,
            entry,
            f'the label {label!r} starts or ends with "-"',
            'Give the host name as DNS has it: each label starts and ends with a letter or digit.',
        )


def parse_name(host: str, where: str, entry: object) -> tuple[str, str]:
    """(kind, target) of a host name or a wildcard."""
    if host == '*':
        raise refuse(
            where,
            entry,
            'a lone "*" would let every name out',
            'Name the domain, as in *.example.com, or use mode: open.',
        )
    wildcard = host.startswith('*.')
    domain = host[2:] if wildcard else host
    if '*' in domain:
        raise refuse(
            where,
            entry,
            'a wildcard stands only as the whole first label',
            'Write *.example.com, which covers example.com and every name below it.',
        )
    if len(domain) > MAX_NAME:
        raise refuse(
            where, entry, f'the name is longer than {MAX_NAME} characters', 'Give the host name as DNS has it.'
        )
    labels = domain.split('.')
    for label in labels:
        check_label(label, where, entry)
    if labels[-1].isdigit():
        raise refuse(
            where, entry, 'its last label is all digits, so it is neither a name nor an IPv4 address', 'Correct it.'
        )
    return ('domain' if wildcard else 'name'), domain


def parse_host(host: str, ports: tuple[int, ...], bracketed: bool, where: str, entry: object) -> Rule:
    if not host:
        raise refuse(where, entry, 'it names no host', 'Give a host, such as api.example.com or 10.0.0.0/8.')
    if bracketed:
        if not IPV6_CHARACTERS.fullmatch(host):
            raise refuse(where, entry, 'only an IPv6 address stands in brackets', 'Write [2001:db8::1]:443.')
        return Rule('net', parse_network(host, 6, where, entry), ports)
    if IPV4_LIKE.fullmatch(host):
        return Rule('net', parse_network(host, 4, where, entry), ports)
    if not host.isascii():
        raise refuse(where, entry, 'it is not plain ASCII', 'Write an international name in its xn-- form.')
    kind, target = parse_name(host, where, entry)
    return Rule(kind, target, ports)


def parse_preset(text: str, where: str) -> list[Rule]:
    name = text[len('preset:') :]
    if name not in PRESETS:
        known = ', '.join(f'preset:{known}' for known in sorted(PRESETS))
        if ':' in name and name.split(':')[0] in PRESETS:
            raise refuse(where, text, 'a preset carries its own ports', f'Write {text.rsplit(":", 1)[0]} alone.')
        raise refuse(where, text, 'there is no such preset', f'Use one of {known}, or list the hosts yourself.')
    rules: list[Rule] = []
    for entry in PRESETS[name]:
        rules.extend(replace(rule, preset=name) for rule in parse_entry(entry, f'{where} ({text})'))
    return rules


def entry_text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise refuse(
            where, value, 'it is not a host', 'Give a text such as api.example.com or {host: ..., ports: [...]}.'
        )
    if len(value) > MAX_ENTRY_CHARS:
        raise refuse(
            where, value, f'it is longer than {MAX_ENTRY_CHARS} characters', 'Give one host name, address or network.'
        )
    if not value.isprintable() or ' ' in value:
        raise refuse(
            where, value, 'it holds a space or a control character (such as a line break)', 'Give the host alone.'
        )
    return value.lower()


def parse_mapping(entry: Mapping[object, object], where: str) -> Rule:
    unknown = next((key for key in entry if key not in ENTRY_KEYS), None)
    if unknown is not None:
        raise refuse(f'{where}.{unknown}', entry[unknown], 'it is not a key of an entry', 'Use only host and ports.')
    text = entry_text(entry.get('host'), f'{where}.host')
    if text.startswith('preset:'):
        raise refuse(where, dict(entry), 'a preset carries its own ports', f'Write {text} as an entry of its own.')
    host, written, bracketed = split_ports(text, where)
    given = entry.get('ports')
    if given is not None and written is not None:
        raise refuse(where, dict(entry), 'it gives its ports twice', 'Give them either in host or in ports.')
    ports = written or DEFAULT_PORTS
    if given is not None:
        ports = parse_ports(as_list(given, f'{where}.ports'), f'{where}.ports', given)
    return parse_host(host, ports, bracketed, where, dict(entry))


def parse_entry(entry: object, where: str) -> list[Rule]:
    """The rules of one entry: one, or a preset's."""
    if isinstance(entry, Mapping):
        return [parse_mapping(entry, where)]
    text = entry_text(entry, where)
    if text.startswith('preset:'):
        return parse_preset(text, where)
    host, ports, bracketed = split_ports(text, where)
    return [parse_host(host, ports or DEFAULT_PORTS, bracketed, where, entry)]


def normalize(rules: Iterable[Rule]) -> tuple[Rule, ...]:
    """Rules sorted, with the ports of one host from one source merged: equal however they were written."""
    merged: dict[tuple[str, str, str], set[int]] = {}
    for rule in rules:
        merged.setdefault((rule.kind, rule.target, rule.preset), set()).update(rule.ports)
    kept = [Rule(kind, target, tuple(sorted(ports)), preset) for (kind, target, preset), ports in merged.items()]
    return tuple(sorted(kept, key=lambda rule: (rule.preset, rule.kind, rule.target, rule.ports)))


def parse_list(value: object, where: str, within: tuple[Rule, ...] | None = None) -> tuple[Rule, ...]:
    """The normalised rules of one list (allow, deny or executor); with within, each entry must lie within it."""
    rules: list[Rule] = []
    for index, entry in enumerate(as_list(value, where)):
        found = parse_entry(entry, f'{where}[{index}]')
        if within is not None:
            check_narrower(found, within, f'{where}[{index}]')
        rules.extend(found)
    return normalize(rules)


def covers(outer: Rule, inner: Rule) -> bool:
    """Whether every host inner names is a host outer names (ports aside)."""
    if outer.kind == 'net' or inner.kind == 'net':
        if outer.kind != inner.kind:
            return False
        small, large = as_network(inner.target), as_network(outer.target)
        return small.version == large.version and small.subnet_of(large)  # type: ignore[arg-type]
    if outer.kind == 'name':
        return inner.kind == 'name' and inner.target == outer.target
    return inner.target == outer.target or inner.target.endswith('.' + outer.target)


def check_narrower(executor: Iterable[Rule], allow: tuple[Rule, ...], where: str) -> None:
    """Refuse an Executor rule the box's own allow list does not cover, on every one of its ports."""
    for rule in executor:
        reachable = set(port for outer in allow if covers(outer, rule) for port in outer.ports)
        for port in rule.ports:
            if port not in reachable:
                raise refuse(
                    where,
                    rule.label,
                    f"the box itself may not reach {rule.host} on port {port}, and Executor's list may only "
                    'narrow what the box may reach',
                    f'Add {rule.host}:{port} to allow as well, or remove it from executor.',
                )
