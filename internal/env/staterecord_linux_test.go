package env

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/sandbox"
)

// TestRecordWritten: an environment's record is on disk once Create returns,
// naming its owner, options and sandbox leftover, and goes with Destroy.
func TestRecordWritten(t *testing.T) {
	m := newManager(t, Config{})
	info := create(t, m, CreateOptions{Labels: map[string]string{"k": "v"}, TTL: time.Hour})
	r, err := m.readRecord(info.ID)
	if err != nil {
		t.Fatal(err)
	}
	e := envOf(t, m, info.ID)
	if r.Options.Owner != alice || r.Options.Labels["k"] != "v" || !r.Created.Equal(info.CreatedAt) || !r.Expires.Equal(info.ExpiresAt) ||
		r.Sandbox != e.ns().Leftover() || r.Sandbox.State == "" {
		t.Fatalf("record = %+v, want it to describe %+v (sandbox %+v)", r, info, e.ns().Leftover())
	}
	if err := m.Destroy(context.Background(), alice, info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(m.envsDir(), info.ID)); err == nil {
		t.Fatal("the record outlived Destroy")
	}
}

// lockedBuffer collects a logger's lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRecordForged is the attacker's test of the state records: records that are
// corrupt or hostile (a sandbox leftover outside the sandbox state root, or a
// live sandbox's; a directory or record that is a link; a record naming another
// id; an oversized or malformed one) are each refused with a log line naming
// the directory, restore nothing, and touch nothing outside the state
// directory: not the victim directory, not the live environment.
func TestRecordForged(t *testing.T) {
	victim := t.TempDir()
	precious := filepath.Join(victim, "precious")
	if err := os.WriteFile(precious, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	other := newManager(t, Config{})
	liveID := create(t, other, CreateOptions{}).ID
	live := envOf(t, other, liveID).ns().Leftover()

	state := t.TempDir()
	envs := filepath.Join(state, "envs")
	if err := os.MkdirAll(envs, 0o700); err != nil {
		t.Fatal(err)
	}
	good := func(id string, l sandbox.Leftover) stateRecord {
		return stateRecord{Version: recordVersion, ID: id, Options: CreateOptions{Owner: alice}, Created: time.Now(), Sandbox: l}
	}
	put := func(name string, content []byte) {
		t.Helper()
		dir := filepath.Join(envs, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if content != nil {
			if err := os.WriteFile(filepath.Join(dir, recordName), content, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	js := func(r stateRecord) []byte {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	id := func(c byte) string { return "env-" + strings.Repeat(string(c), 24) }
	stateRoot := filepath.Join(os.TempDir(), "agentbox-state")
	cases := map[string]string{} // directory name: why
	add := func(name, why string, content []byte) {
		put(name, content)
		cases[name] = why
	}
	add(id('a'), "leftover outside the state root", js(good(id('a'), sandbox.Leftover{State: victim, UID: live.UID})))
	add(id('b'), "leftover escaping the state root", js(good(id('b'), sandbox.Leftover{State: stateRoot + "/sb-x/../../../" + victim, UID: live.UID})))
	add(id('c'), "a live sandbox's leftover", js(good(id('c'), live)))
	add(id('d'), "another id", js(good(id('e'), live)))
	add(id('f'), "malformed", []byte(`{"version":1,`))
	add(id('1'), "unknown field", []byte(`{"version":1,"id":"`+id('1')+`","pid":1}`))
	add(id('2'), "oversized", append(js(good(id('2'), live)), bytes.Repeat([]byte(" "), maxRecord)...))
	add(id('3'), "future version", js(stateRecord{Version: 99, ID: id('3')}))
	add("evil", "not an id", js(good("evil", live)))
	// A record that is a link to a file outside, a directory that is a link.
	put(id('4'), nil)
	if err := os.Symlink(precious, filepath.Join(envs, id('4'), recordName)); err != nil {
		t.Fatal(err)
	}
	cases[id('4')] = "record is a link"
	if err := os.Symlink(victim, filepath.Join(envs, id('5'))); err != nil {
		t.Fatal(err)
	}
	cases[id('5')] = "directory is a link"

	var log lockedBuffer
	m := newManager(t, Config{StateDir: state, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if list, _ := m.List(context.Background(), alice, nil); len(list) != 0 {
		t.Fatalf("forged records restored: %+v", list)
	}
	for name, why := range cases {
		if !strings.Contains(log.String(), "refusing an environment's state record") || !strings.Contains(log.String(), filepath.Join(envs, name)) {
			t.Errorf("%s (%s): no log line refusing it:\n%s", name, why, log.String())
		}
		if _, err := os.Lstat(filepath.Join(envs, name)); err == nil {
			t.Errorf("%s (%s): its directory was kept", name, why)
		}
	}
	if b, err := os.ReadFile(precious); err != nil || string(b) != "x" {
		t.Fatalf("the victim file: %q, %v", b, err)
	}
	if _, err := os.Stat(live.State); err != nil {
		t.Fatalf("the live sandbox's state: %v", err)
	}
	if out := sh(t, other, liveID, "echo alive"); out != "alive\n" {
		t.Fatalf("the live environment: %q", out)
	}
}

// TestRecordFollowsNetwork: a network policy set on a live environment is what
// its record says, so that a restart does not bring back an older one.
func TestRecordFollowsNetwork(t *testing.T) {
	m := newManager(t, Config{})
	info := create(t, m, CreateOptions{Network: &Network{Allow: []string{"example.com"}}})
	if err := m.SetNetwork(context.Background(), alice, info.ID, Network{Allow: []string{"a.test"}}); err != nil {
		t.Fatal(err)
	}
	r, err := m.readRecord(info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Options.Network; n == nil || len(n.Allow) != 1 || n.Allow[0] != "a.test" || r.Withheld {
		t.Fatalf("record's network after SetNetwork: %+v (withheld %v)", n, r.Withheld)
	}
}

// TestRecordGoesWithSnapshot: an environment on snapshot layers has no record
// (the layers are detached mounts that die with this process, so a restart
// could not restore it): a snapshot removes its record, a fork never has one,
// and neither's sandbox keeps a leftover for ReapStale to spare.
func TestRecordGoesWithSnapshot(t *testing.T) {
	m := newManager(t, Config{})
	ctx := context.Background()
	id := create(t, m, CreateOptions{}).ID
	if _, err := os.Lstat(filepath.Join(envOf(t, m, id).dir, recordName)); err != nil {
		t.Fatalf("no record before the snapshot: %v", err)
	}
	if _, err := m.Snapshot(ctx, alice, id); err != nil {
		t.Fatal(err)
	}
	forks, err := m.Fork(ctx, alice, id, ForkOptions{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, eid := range []string{id, forks[0].ID} {
		e := envOf(t, m, eid)
		if _, err := os.Lstat(filepath.Join(e.dir, recordName)); err == nil {
			t.Errorf("%s on snapshot layers has a record", eid)
		}
		if l := e.sandbox().(*sandbox.Sandbox).Leftover(); l != (sandbox.Leftover{}) {
			t.Errorf("%s on snapshot layers keeps %+v", eid, l)
		}
	}
}
