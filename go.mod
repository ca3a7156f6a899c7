module github.com/agentbox/agentbox

go 1.26.8

require (
	github.com/aymanbagabas/go-udiff v0.4.1 // indirect
	github.com/bluekeyes/go-gitdiff v0.9.0 // indirect
	github.com/containerd/cgroups/v3 v3.1.3 // indirect
	github.com/elastic/go-seccomp-bpf v1.6.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/landlock-lsm/go-landlock v0.11.2 // indirect
	github.com/moby/sys/userns v0.1.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
