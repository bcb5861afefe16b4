# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Redaction of secrets from log lines, and the level a line says it has.

Redaction replaces with [REDACTED]: the values (8+ characters) of environment
variables whose names have a TOKEN part or mention a password, secret, API
key, authorization, cookie or private key; Bearer credentials; the values of
Authorization, Proxy-Authorization, Cookie and Set-Cookie headers; sk-...
style API keys and GitHub tokens; and the values of keys ending in "token" or
naming a password, secret, API key or credential, after =, : or %3D (quoted
values whole).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

REDACTED = '[REDACTED]'

SENSITIVE_NAME_PARTS = (
    'PASSWORD',
    'PASSWD',
    'SECRET',
    'APIKEY',
    'API_KEY',
    'AUTHORIZATION',
    'COOKIE',
    'PRIVATE_KEY',
    'ACCESS_KEY',
    'CREDENTIAL',
)
MIN_SECRET_LEN = 8
# A quoted value is consumed whole (up to 8 KiB), an unquoted one up to a
# separator.
_VALUE = r"""(?P<value>"(?:[^"\\\n]|\\.){0,8192}"|'[^'\n]{0,8192}'|[^\s,;&"'<>(){}\[\]]+)"""
_KEY = (
    r'(?P<key>(?<![A-Za-z0-9_\-])(?:[A-Za-z0-9_\-]*token'
    r'|[A-Za-z0-9_\-]*(?:secret|password|passwd|api[_\-]?key|auth[_\-]?key|private[_\-]?key'
    r'|access[_\-]?key|credential)[A-Za-z0-9_\-]*)(?![A-Za-z0-9_\-]))'
)
KEY_VALUE_RE = re.compile(r"(?P<q>[\"']?)" + _KEY + r'(?P=q)(?P<sep>\s*(?:=|:|%3[Dd])\s*)' + _VALUE, re.IGNORECASE)
HEADER_RE = re.compile(
    r'(?P<name>(?<![A-Za-z0-9_\-])(?:proxy-)?authorization|(?<![A-Za-z0-9_\-])(?:set-)?cookie)'
    r"(?P<sep>[\"']?\s*:\s*)(?P<value>\S.*)$",
    re.IGNORECASE,
)
BEARER_RE = re.compile(r'\b(?P<scheme>bearer)\s+(?P<value>(?!\[REDACTED\])[A-Za-z0-9\-._~+/=%:]+)', re.IGNORECASE)
KNOWN_KEY_RE = re.compile(
    r'(?<![A-Za-z0-9])(?:sk-[A-Za-z0-9][A-Za-z0-9_\-]{15,}|gh[pousr]_[A-Za-z0-9]{20,}'
    r'|xox[abprs]-[A-Za-z0-9\-]{10,})'
)


def sensitive_env_name(name: str) -> bool:
    upper = name.upper()
    if 'TOKEN' in re.split(r'[^A-Z0-9]+', upper) or upper.endswith('TOKEN'):
        return True
    return any(part in upper for part in SENSITIVE_NAME_PARTS)


def secret_values(environ: Mapping[str, str]) -> list[str]:
    """Values of sensitive environment variables, longest first."""
    values = set()
    for key, value in environ.items():
        value = (value or '').strip()
        if len(value) >= MIN_SECRET_LEN and sensitive_env_name(key):
            values.add(value)
    return sorted(values, key=len, reverse=True)


def _quoted_redacted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in '"\'':
        return value[0] + REDACTED + value[0]
    return REDACTED


class Redactor:
    """Removes secrets from one line of text."""

    def __init__(self, environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> None:
        environ = os.environ if environ is None else environ
        self.secrets = sorted(
            set(secret_values(environ)) | {s for s in extra if len(s) >= MIN_SECRET_LEN}, key=len, reverse=True
        )

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        text = HEADER_RE.sub(lambda m: m.group('name') + m.group('sep') + REDACTED, text)
        text = BEARER_RE.sub(lambda m: m.group('scheme') + ' ' + REDACTED, text)
        text = KNOWN_KEY_RE.sub(REDACTED, text)
        text = KEY_VALUE_RE.sub(
            lambda m: m.group('q')
            + m.group('key')
            + m.group('q')
            + m.group('sep')
            + _quoted_redacted(m.group('value')),
            text,
        )
        return text


_LEVELS = {
    'trace': 'debug',
    'debug': 'debug',
    'info': 'info',
    'notice': 'info',
    'warn': 'warning',
    'warning': 'warning',
    'error': 'error',
    'err': 'error',
    'fatal': 'critical',
    'critical': 'critical',
    'crit': 'critical',
    'panic': 'critical',
}
LEVEL_KEY_RE = re.compile(r"""(?:\blevel|\blvl|"level"|"severity")\s*[=:]\s*"?(?P<level>[A-Za-z]+)""", re.IGNORECASE)
LEVEL_WORD_RE = re.compile(
    r'(?<![A-Za-z])(?P<level>TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|FATAL|CRITICAL|PANIC)(?![A-Za-z])'
)


def detect_level(line: str) -> str | None:
    """The line's level when it says one (level=..., "level": ..., or an upper-case word near the start)."""
    m = LEVEL_KEY_RE.search(line)
    if m and m.group('level').lower() in _LEVELS:
        return _LEVELS[m.group('level').lower()]
    m = LEVEL_WORD_RE.search(line[:48])
    if m:
        return _LEVELS[m.group('level').lower()]
    return None


def normal_level(word: str) -> str | None:
    """The canonical level (debug, info, warning, error, critical) a level word names, or None."""
    return _LEVELS.get(word.strip().lower())
