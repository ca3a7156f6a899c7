package nsinit

// Hostname is the sandbox's host name.
const Hostname = "agentbox"

// UID and GID of the sandbox user ("agentbox") inside the user namespace.
const (
	UID = 1000
	GID = 1000
)

// etcFiles is the generated /etc: only what libc, Python and git look up. The host's
// /etc is not visible; its users, groups, hosts and resolvers stay out.
var etcFiles = map[string]string{
	"passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
		"agentbox:x:1000:1000:agentbox:/tmp:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
	"group": "root:x:0:\n" +
		"agentbox:x:1000:\n" +
		"nogroup:x:65534:\n",
	"hosts": "127.0.0.1\tlocalhost " + Hostname + "\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n",
	"hostname":    Hostname + "\n",
	"resolv.conf": "",
	"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files\n" +
		"networks: files\nprotocols: files\nservices: files\nethers: files\nrpc: files\n",
}

// systemDirs are the host directories that hold programs and libraries.
var systemDirs = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// etcHost lists the host /etc entries mirrored read-only (symlinks recreated):
// the dynamic linker cache, CA certificates (Debian and Red Hat layouts), OpenSSL's
// configuration, Debian's alternatives symlinks (awk, cc, editor…), the time zone,
// os-release, and the protocol and service tables getaddrinfo reads. Missing entries
// are skipped.
var etcHost = []string{
	"ld.so.cache",
	"ssl/certs",
	"ssl/openssl.cnf",
	"pki/tls/certs",
	"pki/ca-trust/extracted",
	"ca-certificates.crt",
	"alternatives",
	"localtime",
	"os-release",
	"protocols",
	"services",
}
