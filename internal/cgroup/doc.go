// Package cgroup puts one sandboxed run into a control group of its own, on cgroup v1
// (including the systemd "hybrid" layout) and on cgroup v2: a memory limit with swap
// off, a pids limit and a CPU quota; usage statistics (CPU time, memory peak, OOM
// kills, pids-limit hits); a kill of every process in the group that returns only
// once the group is empty; removal; and the reaping of groups left by a crashed run.
//
// It writes the cgroupfs files directly. github.com/containerd/cgroups/v3 was
// considered: its cgroup1 and cgroup2 packages need modules this repository does not
// carry (cilium/ebpf, go-systemd, godbus, protobuf, runtime-spec), cgroup1 has no
// cgroup-wide kill, cgroup2's Kill does not wait for the group to empty, and its
// root package only offers a cached mode probe of a fixed path. The files used here
// are few and stable kernel ABI.
//
// On v1 a run joins the memory, pids, cpu, cpuacct and freezer hierarchies (never
// cpuset, whose children start with no CPUs); on a hybrid host the cgroup2 mount
// carries no controllers and is not used. On v2 it joins one directory with the
// memory, pids and cpu controllers enabled. Every group lives under a parent,
// "agentbox" by default, below the root of each hierarchy.
//
// It deliberately does not limit I/O bandwidth, disk space, CPU sets or hugetlb,
// does not talk to systemd, and does not move the calling process: the caller
// starts the child (stopped at a gate) and adds it with AddProc, or clones it
// straight into the group with FD on v2.
package cgroup
