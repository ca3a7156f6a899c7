package env

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestExpiry: the reaper destroys an environment past its TTL, and one idle (no
// API call in progress or made) past its idle timeout; a call in progress, however
// long, is not idleness. Their owner then hears ErrDestroyed. The test runs the
// reaper's rounds itself (reapDue) at chosen times, so no deadline depends on how
// loaded the machine is; TestReaperRuns checks that the reaper runs them.
func TestExpiry(t *testing.T) {
	m := newManager(t, Config{ReapInterval: time.Hour})
	ctx := context.Background()
	ttl := create(t, m, CreateOptions{TTL: time.Hour})
	idle := create(t, m, CreateOptions{Idle: time.Hour})
	if ttl.ExpiresAt.IsZero() || !idle.ExpiresAt.IsZero() {
		t.Fatalf("ExpiresAt: ttl %v idle %v", ttl.ExpiresAt, idle.ExpiresAt)
	}
	fTTL, fIdle := footprintOf(envOf(t, m, ttl.ID)), footprintOf(envOf(t, m, idle.ID))
	info := func(id string) Info {
		i, err := m.Get(ctx, alice, id)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}

	// Every call counts as use.
	before := time.Now()
	if _, err := m.Stat(ctx, alice, idle.ID, "."); err != nil {
		t.Fatal(err)
	}
	if used := info(idle.ID).LastUsed; used.Before(before) {
		t.Errorf("a call at %v left LastUsed at %v", before, used)
	}
	m.reapDue(ttl.ExpiresAt.Add(-time.Minute))
	if info(ttl.ID).State != StateRunning || info(idle.ID).State != StateRunning {
		t.Fatal("reaped before the TTL or the idle timeout")
	}

	// A call in progress, here for ten hours, is not idleness; the TTL still ends
	// the other environment.
	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := m.Exec(callCtx, alice, idle.ID, ExecRequest{Argv: []string{"sleep", "1000"}})
		done <- err
	}()
	e := envOf(t, m, idle.ID)
	if !settle(func() bool { e.mu.Lock(); defer e.mu.Unlock(); return e.inflight > 0 }) {
		t.Fatal("the call never started")
	}
	m.reapDue(time.Now().Add(10 * time.Hour))
	if got := info(idle.ID).State; got != StateRunning {
		t.Errorf("a long call counted as idleness: %s", got)
	}
	if got := info(ttl.ID).State; got != StateDestroyed {
		t.Errorf("past its TTL: %s", got)
	}
	if _, err := m.Exec(ctx, alice, ttl.ID, ExecRequest{Argv: []string{"true"}}); !errors.Is(err, ErrDestroyed) {
		t.Errorf("Exec past TTL = %v", err)
	}
	cancel()
	<-done

	// Idle from the end of its last call on.
	last := info(idle.ID).LastUsed
	m.reapDue(last.Add(time.Hour - time.Second))
	if got := info(idle.ID).State; got != StateRunning {
		t.Errorf("reaped before an hour of idleness: %s", got)
	}
	m.reapDue(last.Add(time.Hour + time.Second))
	if got := info(idle.ID).State; got != StateDestroyed {
		t.Errorf("idle for an hour: %s", got)
	}
	if _, err := m.Stat(ctx, alice, idle.ID, "."); !errors.Is(err, ErrDestroyed) {
		t.Errorf("Stat when idle = %v", err)
	}
	for _, f := range []footprint{fTTL, fIdle} {
		settle(f.gone)
		f.check(t)
	}
}

// TestReaperRuns: the background reaper destroys an environment once it is due.
func TestReaperRuns(t *testing.T) {
	m := newManager(t, Config{ReapInterval: 20 * time.Millisecond})
	id := create(t, m, CreateOptions{}).ID
	e := envOf(t, m, id)
	f := footprintOf(e)
	e.mu.Lock()
	e.idle = time.Millisecond // due from now on; made this way so it cannot go before its footprint is taken
	e.mu.Unlock()
	if !settle(func() bool { i, _ := m.Get(context.Background(), alice, id); return i.State == StateDestroyed }) {
		t.Fatal("the reaper did not destroy an idle environment")
	}
	settle(f.gone)
	f.check(t)
}

// TestPresetSharing: two environments from one workspace preset share its read-only
// lower layer and have independent upper layers; the workspace preset never changes.
func TestPresetSharing(t *testing.T) {
	tmpl := fixture(t)
	m := newManager(t, Config{Presets: map[string]string{"base": tmpl}})
	ctx := context.Background()
	a := create(t, m, CreateOptions{Preset: "base"})
	b := create(t, m, CreateOptions{Preset: "base"})
	if a.Preset != "base" {
		t.Fatalf("Info.Preset %q", a.Preset)
	}
	sh(t, m, a.ID, "echo from a > README.md; echo a > only-a")
	if err := m.WriteFile(ctx, alice, b.ID, "only-b", []byte("b\n")); err != nil {
		t.Fatal(err)
	}
	if out := sh(t, m, b.ID, "cat README.md; ls"); out != "hello\nREADME.md\ndata.bin\nonly-b\nsrc\n" {
		t.Errorf("b sees %q", out)
	}
	if out := sh(t, m, a.ID, "cat README.md; ls"); out != "from a\nREADME.md\ndata.bin\nonly-a\nsrc\n" {
		t.Errorf("a sees %q", out)
	}
	da, _ := m.Diff(ctx, alice, a.ID)
	db, _ := m.Diff(ctx, alice, b.ID)
	if !strings.Contains(string(da), "only-a") || strings.Contains(string(da), "only-b") ||
		!strings.Contains(string(db), "only-b") || strings.Contains(string(db), "README") {
		t.Errorf("diffs mix:\n%s\n---\n%s", da, db)
	}
	if got, _ := os.ReadFile(filepath.Join(tmpl, "README.md")); string(got) != "hello\n" {
		t.Errorf("workspace preset changed: %q", got)
	}
	if ents, _ := os.ReadDir(tmpl); len(ents) != 3 {
		t.Errorf("workspace preset has %d entries", len(ents))
	}
}

// TestTenantIsolation: another tenant gets ErrNotFound for every operation on an
// environment or artifact it does not own, exactly as for ones that do not exist,
// and sees none of them in List; destroyed ones stay invisible to it too.
func TestTenantIsolation(t *testing.T) {
	m := newManager(t, Config{})
	ctx := context.Background()
	id := create(t, m, CreateOptions{Owner: alice, Labels: map[string]string{"x": "1"}}).ID
	sh(t, m, id, "echo secret > s.txt")
	a, err := m.Export(ctx, alice, id, "s.txt")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := m.Start(ctx, alice, id, ExecRequest{Argv: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	same := Owner{Tenant: "alice", Task: "another-task"} // the tenant is what counts
	if _, err := m.ReadFile(ctx, same, id, "s.txt", 0, 0); err != nil {
		t.Fatalf("same tenant, other task: %v", err)
	}

	for _, target := range []string{id, "env-000000000000000000000000"} {
		calls := map[string]func() error{
			"Get":        func() error { _, err := m.Get(ctx, bob, target); return err },
			"Exec":       func() error { _, err := m.Exec(ctx, bob, target, ExecRequest{Argv: []string{"true"}}); return err },
			"Start":      func() error { _, err := m.Start(ctx, bob, target, ExecRequest{Argv: []string{"true"}}); return err },
			"Wait":       func() error { _, err := m.Wait(ctx, bob, target, pid); return err },
			"Events":     func() error { _, err := m.Events(ctx, bob, target, pid, 0); return err },
			"WriteStdin": func() error { return m.WriteStdin(ctx, bob, target, pid, []byte("x"), true) },
			"Signal":     func() error { return m.Signal(ctx, bob, target, pid, "KILL") },
			"ReadFile":   func() error { _, err := m.ReadFile(ctx, bob, target, "s.txt", 0, 0); return err },
			"WriteFile":  func() error { return m.WriteFile(ctx, bob, target, "s.txt", []byte("x")) },
			"ListDir":    func() error { _, err := m.ListDir(ctx, bob, target, "."); return err },
			"Stat":       func() error { _, err := m.Stat(ctx, bob, target, "s.txt"); return err },
			"Remove":     func() error { return m.Remove(ctx, bob, target, "s.txt") },
			"Mkdir":      func() error { return m.Mkdir(ctx, bob, target, "d") },
			"Download":   func() error { return m.Download(ctx, bob, target, ".", &bytes.Buffer{}) },
			"Upload":     func() error { return m.Upload(ctx, bob, target, ".", &bytes.Buffer{}) },
			"ApplyPatch": func() error { _, err := m.ApplyPatch(ctx, bob, target, []byte("x")); return err },
			"StrReplace": func() error { return m.StrReplace(ctx, bob, target, "s.txt", "secret", "x") },
			"Diff":       func() error { _, err := m.Diff(ctx, bob, target); return err },
			"Export":     func() error { _, err := m.Export(ctx, bob, target, "s.txt"); return err },
			"Destroy":    func() error { return m.Destroy(ctx, bob, target) },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, ErrNotFound) {
				t.Errorf("bob %s on %s = %v, want ErrNotFound", name, target, err)
			}
		}
	}
	if _, _, err := m.ReadArtifact(ctx, bob, a.Ref, 0, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob reads alice's artifact: %v", err)
	}
	missing := "sha256:" + strings.Repeat("0", 64)
	if _, _, err := m.ReadArtifact(ctx, alice, missing, 0, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing artifact: %v", err)
	}
	if l, _ := m.List(ctx, bob, nil); len(l) != 0 {
		t.Errorf("bob lists %+v", l)
	}
	if l, _ := m.List(ctx, alice, map[string]string{"x": "2"}); len(l) != 0 {
		t.Errorf("label filter: %+v", l)
	}
	if out := sh(t, m, id, "cat s.txt"); out != "secret\n" {
		t.Errorf("bob changed alice's file: %q", out)
	}
	// The same bytes exported by bob are bob's own record; alice's stays hers.
	bid := create(t, m, CreateOptions{Owner: bob}).ID
	if err := m.WriteFile(ctx, bob, bid, "s.txt", []byte("secret\n")); err != nil {
		t.Fatal(err)
	}
	ba, err := m.Export(ctx, bob, bid, "s.txt")
	if err != nil || ba.Ref != a.Ref || ba.Owner != bob {
		t.Fatalf("bob's export: %+v, %v", ba, err)
	}
	if _, got, err := m.ReadArtifact(ctx, alice, a.Ref, 0, 0); err != nil || got.Owner != alice || got.EnvID != id {
		t.Errorf("alice's record after bob's export: %+v, %v", got, err)
	}
	if err := m.Destroy(ctx, alice, id); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(ctx, bob, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob Get of a destroyed environment = %v", err)
	}
	if err := m.Destroy(ctx, bob, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob Destroy of a destroyed environment = %v", err)
	}
}
