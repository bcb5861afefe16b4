# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The errors a Docker SDK call raises when the engine refuses or does not answer, for `except` clauses.

Private to the col_agents.tx9 collection. The same errors as _docker.is_engine_error:
the SDK's own DockerException (APIError, NotFound, ...) and OSError, which holds
requests' RequestException (an IOError), socket timeouts and a dropped connection.
A programming error (TypeError, KeyError, ...) is none of them and is not caught.
Without the SDK no client exists, so OSError alone stands in.
"""

from __future__ import annotations

try:
    from docker.errors import DockerException

    ENGINE_ERRORS: tuple[type[Exception], ...] = (DockerException, OSError)
except ImportError:  # the modules report the missing SDK before they make a client
    ENGINE_ERRORS = (OSError,)
