package cgroup

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseKeyed(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[string]int64
	}{
		{"v1 oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
			map[string]int64{"oom_kill_disable": 0, "under_oom": 0, "oom_kill": 3}},
		{"v2 cpu.stat", "usage_usec 1200\nuser_usec 1000\nsystem_usec 200\nnr_periods 0\n",
			map[string]int64{"usage_usec": 1200, "user_usec": 1000, "system_usec": 200, "nr_periods": 0}},
		{"pids.events", "max 59\n", map[string]int64{"max": 59}},
		{"non-integer values skipped", "populated 1\nname foo\nbig 99999999999999999999\n\n",
			map[string]int64{"populated": 1}},
		{"empty", "", map[string]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, parseKeyed(tt.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParsePids(t *testing.T) {
	got, err := parsePids("12\n7\n\n9\n")
	if err != nil || !cmp.Equal(got, []int{12, 7, 9}) {
		t.Errorf("parsePids = %v, %v", got, err)
	}
	for _, bad := range []string{"12\nx\n", "0\n", "-3\n"} {
		if _, err := parsePids(bad); err == nil {
			t.Errorf("parsePids(%q) succeeded", bad)
		}
	}
	if got, err := parsePids(""); err != nil || len(got) != 0 {
		t.Errorf("parsePids(\"\") = %v, %v", got, err)
	}
}

func TestParseInt(t *testing.T) {
	if n, err := parseInt("67108864\n"); err != nil || n != 67108864 {
		t.Errorf("parseInt = %d, %v", n, err)
	}
	if _, err := parseInt("max\n"); err == nil {
		t.Error(`parseInt("max") succeeded`)
	}
}

func TestReleaseAtLeast(t *testing.T) {
	tests := []struct {
		release string
		want    bool
	}{
		{"6.18.44-fc-v782", true},
		{"5.14.0-284.el9.x86_64", true},
		{"5.14-rc1", true},
		{"5.13.19", false},
		{"4.19.0", false},
		{"10.0", true},
		{"garbage", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := releaseAtLeast(tt.release, 5, 14); got != tt.want {
			t.Errorf("releaseAtLeast(%q, 5, 14) = %v, want %v", tt.release, got, tt.want)
		}
	}
}
