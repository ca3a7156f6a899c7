package image

import "github.com/agentbox/agentbox/internal/sandbox/nsinit"

// HostDirs are the host's system directories a host base (a spec with base
// "host") holds, as the namespace sandbox shows them: each real directory at
// the bottom of its own overlay, each symlink (/bin -> usr/bin) as it is.
var HostDirs = nsinit.SystemDirs()

// HostEtc are the entries of the host's /etc a host base holds, read-only, as
// the namespace sandbox mirrors them (the dynamic linker's cache, the CA
// certificates, OpenSSL's configuration, the alternatives links, the time zone,
// os-release and the protocol and service tables). The rest of the host's /etc
// (users, hosts, secrets) stays out.
var HostEtc = nsinit.EtcHost()
