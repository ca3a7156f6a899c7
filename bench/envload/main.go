// Command envload drives an agentbox daemon for bench/pool.sh: a burst of
// concurrent creates each followed by its first exec, a density run (many idle
// environments, and what each costs the host), and the exec tail of a few
// clients on their own environments. It prints one JSON object per run.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/client"
)

type options struct {
	socket, tokenFile, mode string
	n, rounds, conc, execs  int
	poolReady               int
	daemonPid               int
	tailClients             int
}

func main() {
	var o options
	flag.StringVar(&o.socket, "socket", "", "the daemon's Unix socket")
	flag.StringVar(&o.tokenFile, "token-file", "", "a file holding a token with admin and operator scopes")
	flag.StringVar(&o.mode, "mode", "burst", "burst (creates, each then runs true) or density (idle environments, their cost, the exec tail)")
	flag.IntVar(&o.n, "n", 50, "environments per burst, or in the density run")
	flag.IntVar(&o.rounds, "rounds", 3, "bursts")
	flag.IntVar(&o.conc, "concurrency", 4, "density: creates at once")
	flag.IntVar(&o.execs, "execs", 200, "density: execs per tail client")
	flag.IntVar(&o.tailClients, "clients", 10, "density: tail clients, each on its own environment")
	flag.IntVar(&o.poolReady, "pool-ready", 0, "burst: before each burst wait until pool 0 has this many members ready")
	flag.IntVar(&o.daemonPid, "daemon-pid", 0, "the daemon's pid: density measures its memory and its inits', burst their CPU time")
	flag.Parse()
	tok, err := os.ReadFile(o.tokenFile)
	if err != nil {
		fail(err)
	}
	c, err := client.New(client.Options{Socket: o.socket, Token: strings.TrimSpace(string(tok))})
	if err != nil {
		fail(err)
	}
	defer c.Close()
	var out any
	switch o.mode {
	case "burst":
		out, err = burst(c, o)
	case "density":
		out, err = density(c, o)
	default:
		err = fmt.Errorf("-mode %q: burst or density", o.mode)
	}
	if err != nil {
		fail(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "envload:", err)
	os.Exit(1)
}

// dist is a latency distribution in milliseconds.
type dist struct {
	N                  int
	P50, P90, P99, Max float64
}

func distOf(ds []time.Duration) dist {
	slices.Sort(ds)
	q := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.5) - 1
		return float64(ds[max(0, min(i, len(ds)-1))].Microseconds()) / 1000
	}
	return dist{N: len(ds), P50: q(.5), P90: q(.9), P99: q(.99), Max: q(1)}
}

// burst runs rounds of o.n concurrent creates, each followed by its first
// exec, and destroys them after each round.
func burst(c *client.Client, o options) (any, error) {
	ctx := context.Background()
	var create, first []time.Duration
	var daemonCPU, sandboxCPU time.Duration
	for r := 0; r < o.rounds; r++ {
		if o.poolReady > 0 {
			if err := waitPool(o, o.poolReady); err != nil {
				return nil, err
			}
		}
		var before cpuTimes
		if o.daemonPid > 0 {
			before = cpuOf(o.daemonPid)
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		var ids []string
		var errs []error
		gate := make(chan struct{})
		for i := 0; i < o.n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				t0 := time.Now()
				e, err := c.Create(ctx, client.CreateRequest{})
				t1 := time.Now()
				if err == nil {
					var res *client.Result
					res, err = c.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"true"}})
					if err == nil && res.ExitCode != 0 {
						err = fmt.Errorf("true: exit %d: %s", res.ExitCode, res.Error)
					}
				}
				t2 := time.Now()
				mu.Lock()
				defer mu.Unlock()
				if e.ID != "" {
					ids = append(ids, e.ID)
				}
				if err != nil {
					errs = append(errs, err)
					return
				}
				create = append(create, t1.Sub(t0))
				first = append(first, t2.Sub(t0))
			}()
		}
		close(gate)
		wg.Wait()
		if o.daemonPid > 0 {
			d, sb := cpuOf(o.daemonPid).since(before)
			daemonCPU += d
			sandboxCPU += sb
		}
		destroyAll(c, ids)
		if len(errs) > 0 {
			return nil, fmt.Errorf("%d of %d failed: %w", len(errs), o.n, errors.Join(errs...))
		}
	}
	out := map[string]any{"mode": "burst", "n": o.n, "rounds": o.rounds, "pool_ready": o.poolReady,
		"create_ms": distOf(create), "create_to_first_exec_ms": distOf(first)}
	if n := len(first); o.daemonPid > 0 && n > 0 {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
		out["cpu_ms_per_create_and_exec"] = map[string]float64{"daemon": ms(daemonCPU), "sandbox": ms(sandboxCPU)}
	}
	return out, nil
}

// cpuTimes are the CPU time of the daemon (all its threads) and of each of its
// inits' cgroups (the init and its commands), from the kernel's nanosecond
// counters.
type cpuTimes struct {
	daemon  time.Duration
	cgroups map[string]time.Duration
}

func cpuOf(pid int) cpuTimes {
	t := cpuTimes{cgroups: map[string]time.Duration{}}
	stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, f := range stats {
		b, _ := os.ReadFile(f)
		if fs := strings.Fields(string(b)); len(fs) > 0 {
			ns, _ := strconv.ParseInt(fs[0], 10, 64)
			t.daemon += time.Duration(ns)
		}
	}
	for _, kid := range inits(pid) {
		if cg := cgroupOf(kid, "cpuacct"); cg != "" {
			t.cgroups[cg] = time.Duration(readInt(filepath.Join(cg, "cpuacct.usage")))
		}
	}
	return t
}

// since is the CPU time used after b: the daemon's, and that of the sandboxes
// that existed at b (members started since are the refill's, not the burst's).
func (t cpuTimes) since(b cpuTimes) (daemon, sandboxes time.Duration) {
	for cg, was := range b.cgroups {
		if now, ok := t.cgroups[cg]; ok {
			sandboxes += now - was
		}
	}
	return t.daemon - b.daemon, sandboxes
}

func destroyAll(c *client.Client, ids []string) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			c.Destroy(context.Background(), id)
			<-sem
		}()
	}
	wg.Wait()
}

// waitPool waits until the daemon's pool 0 has n members ready (its
// agentbox_pool_ready metric).
func waitPool(o options, n int) error {
	tok, _ := os.ReadFile(o.tokenFile)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", o.socket)
	}}}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		req, _ := http.NewRequest("GET", "http://agentbox/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, `agentbox_pool_ready{pool="0"} `); ok {
				if got, _ := strconv.Atoi(v); got >= n {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pool 0 never had %d members ready", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// density creates o.n idle environments, o.conc at a time, measures what they
// cost the host, runs the exec tail, and destroys them.
func density(c *client.Client, o options) (any, error) {
	ctx := context.Background()
	before := memory(o.daemonPid)
	ids := make([]string, o.n)
	took := make([]time.Duration, o.n)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	next := make(chan int)
	t0 := time.Now()
	for w := 0; w < o.conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t := time.Now()
				e, err := c.Create(ctx, client.CreateRequest{})
				took[i] = time.Since(t)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				ids[i] = e.ID
			}
		}()
	}
	for i := 0; i < o.n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(t0)
	live := slices.DeleteFunc(slices.Clone(ids), func(s string) bool { return s == "" })
	defer destroyAll(c, live)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%d of %d creates failed: %w", len(errs), o.n, errs[0])
	}
	time.Sleep(2 * time.Second) // start-up's garbage settles
	after := memory(o.daemonPid)

	// The tail: each client runs true in its own environment, over and over.
	lat := make([][]time.Duration, o.tailClients)
	var terr error
	var twg sync.WaitGroup
	for k := 0; k < o.tailClients; k++ {
		twg.Add(1)
		go func() {
			defer twg.Done()
			for j := 0; j < o.execs; j++ {
				s := time.Now()
				res, err := c.Exec(ctx, live[k], client.ExecRequest{Argv: []string{"true"}})
				if err == nil && res.ExitCode != 0 {
					err = fmt.Errorf("exit %d", res.ExitCode)
				}
				if err != nil {
					mu.Lock()
					terr = err
					mu.Unlock()
					return
				}
				lat[k] = append(lat[k], time.Since(s))
			}
		}()
	}
	twg.Wait()
	if terr != nil {
		return nil, terr
	}
	tail := distOf(slices.Concat(lat...))
	n := float64(max(after.inits, 1))
	per := func(a, b int64) float64 { return float64(a-b) / n / (1 << 20) }
	// A create's cost as the host fills up: the first and the last tenth.
	tenth := max(o.n/10, 1)
	return map[string]any{"mode": "density", "n": o.n, "created_in_s": elapsed.Seconds(), "inits": after.inits,
		"create_ms_first_tenth": distOf(slices.Clone(took[:tenth])), "create_ms_last_tenth": distOf(slices.Clone(took[o.n-tenth:])),
		"per_env_mib": map[string]float64{
			"init_uss":          float64(after.initUSS) / n / (1 << 20),
			"init_pss":          float64(after.initPSS) / n / (1 << 20),
			"cgroup_usage":      float64(after.cgUsage) / n / (1 << 20),
			"cgroup_kmem":       float64(after.cgKmem) / n / (1 << 20),
			"daemon_rss_growth": per(after.daemonRSS, before.daemonRSS),
			"host_used_growth":  per(after.hostUsed, before.hostUsed),
			"init_threads":      float64(after.threads) / n,
		},
		"exec_tail_ms": tail, "tail_p99_over_p50": tail.P99 / tail.P50}, nil
}

// usage is what the daemon and its inits hold.
type usage struct {
	inits                             int
	initUSS, initPSS, cgUsage, cgKmem int64
	daemonRSS, hostUsed               int64
	threads                           int64
}

// memory measures the daemon (pid) and its children, the inits: their
// proportional and unique set sizes, their cgroups' charge, and the host's
// used memory (MemTotal-MemAvailable; other tenants of the host move it).
func memory(pid int) usage {
	var u usage
	u.daemonRSS = statusKB(pid, "VmRSS") << 10
	mi := fieldsKB("/proc/meminfo")
	u.hostUsed = (mi["MemTotal"] - mi["MemAvailable"]) << 10
	for _, kid := range inits(pid) {
		u.inits++
		r := fieldsKB(fmt.Sprintf("/proc/%d/smaps_rollup", kid))
		u.initPSS += r["Pss"] << 10
		u.initUSS += (r["Private_Clean"] + r["Private_Dirty"]) << 10
		u.threads += statusKB(kid, "Threads")
		if cg := cgroupOf(kid, "memory"); cg != "" {
			u.cgUsage += readInt(filepath.Join(cg, "memory.usage_in_bytes"))
			u.cgKmem += readInt(filepath.Join(cg, "memory.kmem.usage_in_bytes"))
		}
	}
	return u
}

// inits are the daemon's inits: children of its spawner thread, so every
// thread's children are read.
func inits(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(b)) {
			kid, _ := strconv.Atoi(f)
			argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", kid))
			if a0, _, _ := strings.Cut(string(argv), "\x00"); a0 == "agentbox-init" {
				out = append(out, kid)
			}
		}
	}
	return out
}

// cgroupOf is the directory of pid's cgroup v1 controller (a hierarchy whose
// list of controllers includes it, as cpu,cpuacct does).
func cgroupOf(pid int, controller string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), controller) {
			return filepath.Join("/sys/fs/cgroup", f[1], f[2])
		}
	}
	return ""
}

func readInt(p string) int64 {
	b, _ := os.ReadFile(p)
	v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return v
}

func statusKB(pid int, key string) int64 {
	return fieldsKB(fmt.Sprintf("/proc/%d/status", pid))[key]
}

// fieldsKB reads "Key: value [kB]" lines.
func fieldsKB(p string) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(p)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if fs := strings.Fields(v); len(fs) > 0 {
			n, _ := strconv.ParseInt(fs[0], 10, 64)
			out[k] = n
		}
	}
	return out
}
