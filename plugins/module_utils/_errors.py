# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one error type of tx9. Private to the col_agents.tx9 collection.

Every refusal says what is wrong (reason, one sentence for a person), a stable
machine-readable cause that playbooks match on, and a fix the person can run.
"""

from __future__ import annotations

from typing import Any

# Stable cause codes; docs/errors.md describes each one.
CAUSES = (
    'INVALID_NAME',
    'INVALID_ARGUMENT',
    'INVALID_RESOURCES',
    'EGRESS_OPEN',
    'EGRESS_POLICY_INVALID',
    'MOUNT_TARGET_INVALID',
    'MOUNT_TARGET_TAKEN',
    'MOUNT_SOURCE_MISSING',
    'MOUNT_NOT_MOUNTED',
    'NAME_CONFLICT',
    'NAME_EXISTS',
    'NO_BOX',
    'NO_MATCHING_BOX',
    'BOX_BUSY',
    'BOX_SUPERSEDED',
    'NOT_READY',
    'GUEST_FAILED',
    'NOT_RUNNING',
    'TOKEN_MISSING',
    'TOKEN_ROTATION_FAILED',
    'STATE_HOME',
    'DOCKER_UNAVAILABLE',
    'DOCKER_ERROR',
    'IMAGE_MISSING',
    'IMAGE_BUILD_FAILED',
    'IMAGE_ARCHIVE_CORRUPT',
    'ASSETS_INVALID',
    'BASE_IMAGE_UNAVAILABLE',
    'MISSING_LIBRARY',
    'ARCHIVE_INVALID',
    'ARCHIVE_CORRUPT',
    'ARCHIVE_UNSAFE',
    'ARCHIVE_WRITE_FAILED',
    'OUTPUT_EXISTS',
    'NO_SPACE',
    'BAD_PASSWORD',
    'PASSWORD_REQUIRED',
    'GPG_MISSING',
    'GPG_FAILED',
    'DEST_EXISTS',
    'NO_ARCHIVE',
    'CONFIRMATION_REQUIRED',
    'UNHEALTHY',
    'RELAY_FAILED',
    'PRECOPY_UNAVAILABLE',
    'PRECOPY_MISSING',
    'STAGE_STALE',
    'PEER_FAILED',
    'TOOL_INSTALL_FAILED',
)


class Tx9Error(Exception):
    """A refusal with a reason, a stable cause and a fix."""

    def __init__(self, reason: str, cause: str, fix: str = '', details: dict[str, Any] | None = None) -> None:
        if cause not in CAUSES:
            raise ValueError(f'unknown tx9 cause {cause!r}')
        super().__init__(reason)
        self.reason = reason
        self.cause = cause
        self.fix = fix
        self.details: dict[str, Any] = details or {}

    def __str__(self) -> str:
        if self.fix:
            return f'{self.reason} ({self.cause})\n  fix: {self.fix}'
        return f'{self.reason} ({self.cause})'

    def as_result(self) -> dict[str, Any]:
        """The keys every failed module result carries."""
        result: dict[str, Any] = dict(msg=self.reason, cause=self.cause, fix=self.fix)
        result.update(self.details)
        return result
