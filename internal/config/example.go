package config

import (
	"fmt"
	"strings"
)

// Example is the commented configuration `agentbox config init` writes: a personal
// daemon like the one serve runs without a file, with every other key shown at its
// default. home is the user's home directory; the token is read from the file
// agentbox.token beside the configuration.
func Example(home string) string {
	return strings.ReplaceAll(example, "{home}", fmt.Sprintf("%q", home))
}

const example = `# agentbox serve configuration (agentbox serve --config FILE, or $AGENTBOX_CONFIG).
# Every key but tenants and tokens may be left out; the values shown are the defaults.

# Where to listen: a Unix socket (default: $AGENTBOX_SOCKET, else
# $XDG_RUNTIME_DIR/agentbox.sock, or /run/agentbox/agentbox.sock as root),
# or a TCP address instead.
# socket: /run/user/1000/agentbox.sock
# socket_mode: "0600"          # or "0660" to let the socket's group in
# listen: 127.0.0.1:7070

# Where environments keep their state (default: $XDG_STATE_HOME/agentbox, or
# /var/lib/agentbox as root).
# state_dir: /var/lib/agentbox

# Named host directories an environment's workspace may start from:
# env create --preset NAME. (Root file systems are templates: agentbox template.)
# workspace_presets:
#   python: /srv/agentbox/presets/python

tenants:
  local:
    # The host directories an environment may start from (env create --workspace
    # DIR, MCP env_create's workspace): DIR must lie under one of them. The
    # workspace is the read-only lower layer of a copy-on-write overlay: nothing
    # an environment does changes it.
    workspace_roots:
      - {home}
    # The host directories a mount's source may lie under (env create --mount).
    # A mount in mode rw writes to the host: list only what you mean to share.
    # mount_roots:
    #   - /srv/cache
    # What the tenant's environments may reach; "any: true" lifts the bound.
    # Leave it out for no network at all.
    network:
      any: true
      # allow: [pypi, github.com]
      # allow_private: [10.0.0.0/8]
    # The templates (root file systems of the image store) its environments may
    # use, and the names it may build and delete; "*" is every name.
    # templates:
    #   use: [python-pytest]
    #   build: [python-pytest]
    # quota: {environments: 0, memory: 0, artifact_bytes: 0, artifacts: 0, snapshot_bytes: 0}   # 0: unbounded
    # rate: {per_second: 0, burst: 0}                                        # 0: unbounded

tokens:
  - name: local
    tenant: local
    # Exactly one of file, sha256 (hex SHA-256 of the token) or token.
    # A relative file is read from this file's directory.
    file: agentbox.token
    scopes: [env:create, exec, file:read, file:write, artifact:read, admin, operator]

# builds:                      # template builds' steps, where a mirror or TLS interceptor fronts the registries
#   allow_private: []          # private prefixes the registries' names may resolve to, e.g. 10.1.0.0/16
#   ca_files: []               # PEM CA files the steps trust, e.g. /usr/local/share/ca-certificates/site.crt
# mcp:
#   allowed_origins: []        # browser origins besides the daemon's loopback ones
# artifacts: {ttl: 168h, max_bytes: 8G, gc_interval: 10m}
# shutdown: {grace: 30s}
# limits:
#   request_bytes: 64M
#   json_bytes: 8M
#   default_memory: 512M
#   max_memory: 0              # 0: no cap
#   default_workspace: 1G
#   max_workspace: 4G
#   max_ttl: 0                 # 0: no cap
#   max_environments: 0        # live environments, all tenants; 0: no cap
#   idle_pause: 0              # pause an environment idle this long (0: never)
#   max_output_total: 64M
#   max_output_limit: 8M
#   body_timeout: 60s
#   max_connections: 256
# Warm pools: environments of one shape kept started, claimed by a create of
# that shape (same template, preset or workspace, limits after the defaults,
# network or none, no mounts) in well under a millisecond. A claim that finds
# none ready doubles the pool up to max; idle that long it halves to min.
# pools:
#   - {min: 4, max: 32, idle: 1m}                   # host root, empty /workspace
#   - {template: python-pytest, preset: python, memory: 1G, min: 2, max: 8}
#   - {network: true, ttl: 1h, min: 2}              # creates with a network and ttl 1h
# public_metrics: false
`
