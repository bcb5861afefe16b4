# Copyright (c) col_agents.tx9 contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""tx9guest: the runtime inside a tx9 box's containers, behind the hb, tx9-logs and entrypoint launchers.

- Markers under ~/.config/hermes-box/ (on /data, so they travel with the box):
  `quiesced` (its content says who quiesced: user, backup, import, ...),
  `gateway-disabled`, and `gateway-policy-initialized` (a new box starts with
  the gateway disabled exactly once).
- The workload loop (`hb workload`, the container's main process under
  `tx9-logs capture --source agent`): every 20 s (HB_WORKLOAD_INTERVAL) it
  rewires MCP when stale, supervises the custom services and runs the Hermes
  gateway only while it is enabled and the box is not quiesced.
- Custom services: executable regular files named [a-z0-9][a-z0-9_-]{0,62}
  directly in ${XDG_CONFIG_HOME:-$HOME/.config}/hermes-box/services.d, each
  run as the agent with its absolute path as the whole argv, under its own
  `tx9-logs capture --source service-NAME` with a bounded restart loop.
- The gateway runs as `hermes gateway run --replace --external-supervisor`
  under `tx9-logs capture --source hermes`. TX9_GATEWAY_ARGV (a JSON list of
  strings in the container's environment) replaces that argv, e.g. with a
  stand-in process in tests.
- Runtime state (PIDs, locks) lives in TX9_RUNTIME_DIR (default /run/tx9),
  outside /data; `hb init --boot` clears it when the container starts.

Standard library only: it runs under the image's system Python.
"""
