package landlock

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	gll "github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"pgregory.net/rapid"
)

// Rights spelled out by hand, so the table does not restate plan.go's constants.
const (
	fsV1      gll.AccessFSSet  = 1<<13 - 1
	rx                         = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	rwV1                       = fsV1 &^ (ll.AccessFSMakeChar | ll.AccessFSMakeBlock)
	fileRW                     = ll.AccessFSReadFile | ll.AccessFSWriteFile
	tcp       gll.AccessNetSet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	bothScope gll.ScopedSet    = ll.ScopeSignal | ll.ScopeAbstractUnixSocket
)

func TestBuild(t *testing.T) {
	full := Ruleset{
		ReadExec:        []string{"/"},
		ReadWrite:       []string{"/workspace", "/tmp"},
		ReadWriteFiles:  []string{"/dev/null"},
		AllowTCPBind:    []uint16{8080, 0, 8080},
		AllowTCPConnect: []uint16{443},
		ScopeSignals:    true, ScopeAbstractUnix: true,
	}
	paths := func(rw, file gll.AccessFSSet) []pathRule {
		return []pathRule{{"/", rx}, {"/workspace", rw}, {"/tmp", rw}, {"/dev/null", file}}
	}
	refer, trunc, ioctl, unix := gll.AccessFSSet(ll.AccessFSRefer), gll.AccessFSSet(ll.AccessFSTruncate),
		gll.AccessFSSet(ll.AccessFSIoctlDev), gll.AccessFSSet(ll.AccessFSResolveUnix)
	abi4 := func(abi int, fs gll.AccessFSSet, scoped gll.ScopedSet) plan {
		return plan{abi: abi, fs: fs, net: tcp, scoped: scoped, paths: paths(rwV1|refer|trunc, fileRW|trunc),
			bind: []uint16{0, 8080}, connect: []uint16{443}}
	}
	tests := []struct {
		name string
		r    Ruleset
		abi  int
		want plan
	}{
		{"abi 0 enforces nothing", full, 0, plan{}},
		{"negative abi", full, -1, plan{}},
		{"abi 1", full, 1, plan{abi: 1, fs: fsV1, paths: paths(rwV1, fileRW)}},
		{"abi 2 grants refer in ReadWrite only", full, 2, plan{abi: 2, fs: fsV1 | refer, paths: paths(rwV1|refer, fileRW)}},
		{"abi 3 grants truncate", full, 3, plan{abi: 3, fs: fsV1 | refer | trunc, paths: paths(rwV1|refer|trunc, fileRW|trunc)}},
		{"abi 4 handles tcp", full, 4, abi4(4, fsV1|refer|trunc, 0)},
		{"abi 5 handles ioctl, grants none", full, 5, abi4(5, fsV1|refer|trunc|ioctl, 0)},
		{"abi 6 scopes", full, 6, abi4(6, fsV1|refer|trunc|ioctl, bothScope)},
		{"abi 7", full, 7, abi4(7, fsV1|refer|trunc|ioctl, bothScope)},
		{"abi 8", full, 8, abi4(8, fsV1|refer|trunc|ioctl, bothScope)},
		{"abi 9 handles resolve unix, grants none", full, 9, abi4(9, fsV1|refer|trunc|ioctl|unix, bothScope)},
		{"abi 10 leaves udp alone", full, 10, abi4(10, fsV1|refer|trunc|ioctl|unix, bothScope)},
		{"abi 11", full, 11, abi4(11, fsV1|refer|trunc|ioctl|unix, bothScope)},
		{"abi 12 is used as 11", full, 12, abi4(11, fsV1|refer|trunc|ioctl|unix, bothScope)},
		{"no scopes requested", Ruleset{ReadExec: []string{"/"}}, 7,
			plan{abi: 7, fs: fsV1 | refer | trunc | ioctl, net: tcp, paths: []pathRule{{"/", rx}}}},
		{"one scope", Ruleset{ReadExec: []string{"/"}, ScopeSignals: true}, 7,
			plan{abi: 7, fs: fsV1 | refer | trunc | ioctl, net: tcp, scoped: ll.ScopeSignal, paths: []pathRule{{"/", rx}}}},
		{"AllowAllTCP handles no net", Ruleset{ReadExec: []string{"/"}, AllowAllTCP: true}, 7,
			plan{abi: 7, fs: fsV1 | refer | trunc | ioctl, paths: []pathRule{{"/", rx}}}},
		{"Terminals grant ioctl from abi 5", Ruleset{ReadExec: []string{"/"}, Terminals: []string{"/dev/pts"}, AllowAllTCP: true}, 5,
			plan{abi: 5, fs: fsV1 | refer | trunc | ioctl, paths: []pathRule{{"/", rx}, {"/dev/pts", ll.AccessFSWriteFile | ioctl}}}},
		{"Terminals below abi 5: write", Ruleset{ReadExec: []string{"/"}, Terminals: []string{"/dev/pts"}, AllowAllTCP: true}, 4,
			plan{abi: 4, fs: fsV1 | refer | trunc, paths: []pathRule{{"/", rx}, {"/dev/pts", ll.AccessFSWriteFile}}}},
		{"ports dropped below abi 4", Ruleset{ReadExec: []string{"/"}, AllowTCPConnect: []uint16{1}}, 3,
			plan{abi: 3, fs: fsV1 | refer | trunc, paths: []pathRule{{"/", rx}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := build(tt.r, tt.abi)
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(plan{}, pathRule{})); d != "" {
				t.Errorf("build(abi %d) mismatch (-want +got):\n%s", tt.abi, d)
			}
		})
	}
}

// TestHandledMatchesGoLandlock ties handledFS to go-landlock's own presets: every
// filesystem right an ABI offers is handled, and nothing beyond what the ABI offers.
func TestHandledMatchesGoLandlock(t *testing.T) {
	presets := []gll.Config{gll.V1, gll.V2, gll.V3, gll.V4, gll.V5, gll.V6, gll.V7, gll.V8, gll.V9, gll.V10, gll.V11}
	if len(presets) != maxABI {
		t.Fatalf("maxABI = %d, but %d presets listed", maxABI, len(presets))
	}
	full := Ruleset{ReadExec: []string{"/"}, ScopeSignals: true, ScopeAbstractUnix: true}
	for i, preset := range presets {
		abi := i + 1
		p := build(full, abi)
		if p.fs != preset.HandledAccessFS {
			t.Errorf("abi %d: handled fs %v, go-landlock V%d handles %v", abi, p.fs, abi, preset.HandledAccessFS)
		}
		if p.net&^preset.HandledAccessNet != 0 || p.scoped&^preset.Scoped != 0 {
			t.Errorf("abi %d: net %v scoped %v exceed go-landlock V%d (%v)", abi, p.net, p.scoped, abi, preset)
		}
		if p.scoped != preset.Scoped {
			t.Errorf("abi %d: both scopes requested, got %v, V%d offers %v", abi, p.scoped, abi, preset.Scoped)
		}
	}
}

// TestConfigNotBestEffort guards against go-landlock's BestEffort: a rule asking for
// REFER on an ABI 1 kernel would make it silently enforce nothing at all.
func TestConfigNotBestEffort(t *testing.T) {
	for abi := 1; abi <= maxABI; abi++ {
		if s := build(Ruleset{ReadExec: []string{"/"}}, abi).config().String(); strings.Contains(s, "best effort") {
			t.Errorf("abi %d: config %s is best effort", abi, s)
		}
	}
}

// TestBuildProperties checks invariants over random rulesets and ABIs.
func TestBuildProperties(t *testing.T) {
	never := gll.AccessFSSet(ll.AccessFSIoctlDev | ll.AccessFSResolveUnix | ll.AccessFSMakeChar | ll.AccessFSMakeBlock)
	write := gll.AccessFSSet(fsV1 &^ rx)
	rapid.Check(t, func(t *rapid.T) {
		genPaths := rapid.SliceOfN(rapid.SampledFrom([]string{"/", "/a", "/b/c", "/dev/null"}), 0, 3)
		r := Ruleset{
			ReadExec:          genPaths.Draw(t, "rx"),
			ReadWrite:         genPaths.Draw(t, "rw"),
			ReadWriteFiles:    genPaths.Draw(t, "rwf"),
			AllowTCPBind:      rapid.SliceOfN(rapid.Uint16(), 0, 4).Draw(t, "bind"),
			AllowTCPConnect:   rapid.SliceOfN(rapid.Uint16(), 0, 4).Draw(t, "connect"),
			AllowAllTCP:       rapid.Bool().Draw(t, "alltcp"),
			ScopeSignals:      rapid.Bool().Draw(t, "sig"),
			ScopeAbstractUnix: rapid.Bool().Draw(t, "abs"),
		}
		abi := rapid.IntRange(-2, 15).Draw(t, "abi")
		p := build(r, abi)
		if want := min(max(abi, 0), maxABI); p.abi != want || p.applied().ABI != want {
			t.Fatalf("abi %d built as %d, applied %d", abi, p.abi, p.applied().ABI)
		}
		if len(p.paths) != 0 && p.abi == 0 || p.abi > 0 && len(p.paths) != len(r.ReadExec)+len(r.ReadWrite)+len(r.ReadWriteFiles) {
			t.Fatalf("abi %d: %d path rules for %d paths", p.abi, len(p.paths), len(r.ReadExec)+len(r.ReadWrite)+len(r.ReadWriteFiles))
		}
		for i, pr := range p.paths {
			if pr.access&^p.fs != 0 {
				t.Fatalf("rule %v grants unhandled rights (handled %v)", pr, p.fs)
			}
			if pr.access&never != 0 {
				t.Fatalf("rule %v grants a right never granted", pr)
			}
			if i < len(r.ReadExec) && pr.access&write != 0 {
				t.Fatalf("ReadExec rule %v grants a write right", pr)
			}
		}
		if (p.net != 0) != (p.abi >= 4 && !r.AllowAllTCP) {
			t.Fatalf("abi %d AllowAllTCP %v: net handled %v", p.abi, r.AllowAllTCP, p.net)
		}
		if p.net == 0 && (len(p.bind) > 0 || len(p.connect) > 0) {
			t.Fatalf("port rules %v %v without handled net", p.bind, p.connect)
		}
		if p.abi < 6 && p.scoped != 0 {
			t.Fatalf("abi %d: scoped %v", p.abi, p.scoped)
		}
	})
}
