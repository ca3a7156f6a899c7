package cgroup

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestOptionsInvalid: New rejects bad options before touching the system, naming
// the field. Names must not climb out of the parent ("..", "/"), hide, or be odd.
func TestOptionsInvalid(t *testing.T) {
	ok := Options{Name: "run-1"}
	with := func(f func(*Options)) Options { o := ok; f(&o); return o }
	tests := []struct {
		name  string
		opts  Options
		field string
	}{
		{"empty name", Options{}, "Name"},
		{"slash", with(func(o *Options) { o.Name = "a/b" }), "Name"},
		{"dot dot", with(func(o *Options) { o.Name = ".." }), "Name"},
		{"dot", with(func(o *Options) { o.Name = "." }), "Name"},
		{"hidden", with(func(o *Options) { o.Name = ".x" }), "Name"},
		{"leading dash", with(func(o *Options) { o.Name = "-x" }), "Name"},
		{"space", with(func(o *Options) { o.Name = "a b" }), "Name"},
		{"newline", with(func(o *Options) { o.Name = "a\n" }), "Name"},
		{"non-ASCII", with(func(o *Options) { o.Name = "ü" }), "Name"},
		{"too long", with(func(o *Options) { o.Name = strings.Repeat("a", 129) }), "Name"},
		{"absolute parent", with(func(o *Options) { o.Parent = "/agentbox" }), "Parent"},
		{"parent climbs", with(func(o *Options) { o.Parent = "agentbox/../.." }), "Parent"},
		{"parent empty component", with(func(o *Options) { o.Parent = "a//b" }), "Parent"},
		{"parent trailing slash", with(func(o *Options) { o.Parent = "a/" }), "Parent"},
		{"negative memory", with(func(o *Options) { o.MemoryBytes = -1 }), "MemoryBytes"},
		{"tiny memory", with(func(o *Options) { o.MemoryBytes = 4096 }), "MemoryBytes"},
		{"negative pids", with(func(o *Options) { o.Pids = -1 }), "Pids"},
		{"NaN cpus", with(func(o *Options) { o.CPUs = math.NaN() }), "CPUs"},
		{"infinite cpus", with(func(o *Options) { o.CPUs = math.Inf(1) }), "CPUs"},
		{"negative cpus", with(func(o *Options) { o.CPUs = -0.5 }), "CPUs"},
		{"cpus below quota minimum", with(func(o *Options) { o.CPUs = 0.005 }), "CPUs"},
		{"absurd cpus", with(func(o *Options) { o.CPUs = 1e9 }), "CPUs"},
		{"negative timeout", with(func(o *Options) { o.KillTimeout = -time.Second }), "KillTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cg, err := New(tt.opts)
			if cg != nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("New(%+v) = %v, %v; want ErrInvalid", tt.opts, cg, err)
			}
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Field != tt.field {
				t.Fatalf("error %v does not name field %s", err, tt.field)
			}
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	got, err := Options{Name: "A.b_c-9", MemoryBytes: 1 << 20, CPUs: 0.01, Parent: "x/y.z"}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if got.Parent != "x/y.z" || got.KillTimeout != DefaultKillTimeout {
		t.Errorf("normalize = %+v", got)
	}
	got, err = Options{Name: "a"}.normalize()
	if err != nil || got.Parent != DefaultParent {
		t.Errorf("normalize = %+v, %v; want Parent %q", got, err, DefaultParent)
	}
}

func TestCPUQuotaValue(t *testing.T) {
	for cpus, want := range map[float64]int64{0.01: 1000, 0.2: 20000, 1: 100000, 1.5: 150000, 2.000004: 200000} {
		if got := cpuQuota(cpus); got != want {
			t.Errorf("cpuQuota(%v) = %d, want %d", cpus, got, want)
		}
	}
}
