package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/testenv"
)

// TestRestartEvents: a client following a command's events across a SIGKILL of
// the daemon and its restart gets each event exactly once and in order: the Go
// client's stream reconnects to the new daemon by itself (after its last seq), a
// raw request with Last-Event-ID gets exactly the events after that id, the same
// bytes. The command, running when the daemon died, ends with its lost exit; the
// environment's files are there, exec works, and once the new daemon stops
// nothing of either daemon remains.
func TestRestartEvents(t *testing.T) {
	testenv.SkipShort(t, "a daemon killed and restarted")
	dir := t.TempDir()
	d := startDaemon(t, dir)
	tr := d.track()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := client.New(client.Options{Socket: d.socket, Token: e2eToken, Reconnects: 200, ReconnectDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Create(ctx, client.CreateRequest{Workspace: filepath.Join(d.work, "proj")})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"sh", "-c", "echo kept > f"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("write a file: %+v %v", res, err)
	}
	proc, err := c.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"sh", "-c", "echo 1; echo 2; echo 3; exec sleep 300"}})
	if err != nil {
		t.Fatal(err)
	}
	// One stream reads everything the command printed; the other stops after
	// its first event, to resume across the restart.
	all := c.Events(ctx, e.ID, proc, 0)
	for out := ""; out != "1\n2\n3\n"; {
		ev, err := all.Next()
		if err != nil {
			t.Fatal(err)
		}
		out += string(ev.Data)
	}
	s := c.Events(ctx, e.ID, proc, 0)
	first, err := s.Next()
	if err != nil || first.Seq != 1 {
		t.Fatalf("first event %+v, %v", first, err)
	}
	tr.mustHaveSeen(t, 1)
	d.kill()

	d2 := &daemon{t: t, socket: d.socket, state: d.state, work: d.work, cfg: d.cfg}
	restarted := make(chan struct{})
	go func() { defer close(restarted); d2.start() }() // the stream reconnects meanwhile
	got := []client.Event{first}
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the stream across the restart: %v", err)
		}
		got = append(got, ev)
	}
	<-restarted
	last := got[len(got)-1]
	if last.Kind != client.EventExit || last.Result == nil || !strings.HasPrefix(last.Result.Error, "lost:") || last.Result.ExitCode != -1 {
		t.Fatalf("the last event: %+v", last)
	}
	var out string
	for i, ev := range got {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: %+v", i, ev.Seq, got)
		}
		out += string(ev.Data)
	}
	if out != "1\n2\n3\n" || s.Reconns == 0 {
		t.Fatalf("the stream got %q in %d events with %d reconnections", out, len(got), s.Reconns)
	}
	// The raw protocol: exactly what follows Last-Event-ID.
	for _, after := range []int{0, 1, len(got) - 1} {
		ids, datas := rawEvents(t, d2, "/v1/environments/"+e.ID+"/processes/"+proc+"/events", after)
		if len(ids) != len(got)-after {
			t.Fatalf("Last-Event-ID %d: ids %v, want %d events", after, ids, len(got)-after)
		}
		for i, id := range ids {
			if id != strconv.FormatInt(got[after+i].Seq, 10) || !strings.Contains(datas[i], `"seq":`+id) {
				t.Fatalf("Last-Event-ID %d: event %d is id %s %s, want %+v", after, i, id, datas[i], got[after+i])
			}
		}
	}
	c2 := d2.client(e2eToken)
	res, err := c2.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"cat", "f", "hello.txt"}})
	if err != nil || res.Stdout != "kept\nhello\n" {
		t.Fatalf("the restored environment: %+v %v", res, err)
	}
	tr2 := d2.track()
	if _, err := c2.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"sh", "-c", "sleep 0.3"}}); err != nil {
		t.Fatal(err)
	}
	if err := c2.Destroy(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	d2.stop()
	noLeaks(t, tr)
	noLeaks(t, tr2)
	tr2.mustHaveSeen(t, 1)
}

// rawEvents reads a whole event stream with Last-Event-ID after, returning each
// event's id and data lines.
func rawEvents(t *testing.T, d *daemon, path string, after int) (ids, datas []string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", d.socket)
	}}}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://agentbox"+path, nil)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	req.Header.Set("Last-Event-ID", strconv.Itoa(after))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("events: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "id: "); ok {
			ids = append(ids, id)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			datas = append(datas, data)
		}
	}
	return ids, datas
}

// TestShutdownKeeps: a daemon stopped with SIGTERM (serve's default --on-exit
// keep) ends its environments' processes but keeps their files, and the next
// daemon on its state directory lists the environment with them, the command
// that was running ended as lost; one stopped with --on-exit destroy leaves
// nothing of either daemon (no process, mount, cgroup or state).
func TestShutdownKeeps(t *testing.T) {
	testenv.SkipShort(t, "a daemon stopped and restarted")
	dir := t.TempDir()
	d := startDaemon(t, dir)
	d.stop() // restarted with --on-exit keep
	d = &daemon{t: t, socket: d.socket, state: d.state, work: d.work, cfg: d.cfg, keep: true}
	d.start()
	tr := d.track()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := d.client(e2eToken)
	e, err := c.Create(ctx, client.CreateRequest{Workspace: filepath.Join(d.work, "proj")})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"sh", "-c", "echo kept > f"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("write a file: %+v %v", res, err)
	}
	proc, err := c.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	tr.mustHaveSeen(t, 1)
	d.stop()
	// Its processes and cgroups are gone; the environment's state stays.
	if l := tr.leaks(); len(l) != 1 || l[0] != "state "+e.ID {
		t.Fatalf("a daemon stopped with --on-exit keep left %q, want only state %s", l, e.ID)
	}

	d2 := &daemon{t: t, socket: d.socket, state: d.state, work: d.work, cfg: d.cfg}
	d2.start()
	c2 := d2.client(e2eToken)
	list, err := c2.List(ctx, nil)
	if err != nil || len(list) != 1 || list[0].ID != e.ID {
		t.Fatalf("List after the restart = %+v, %v; want %s", list, err, e.ID)
	}
	res, err := c2.Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"cat", "f", "hello.txt"}})
	if err != nil || res.Stdout != "kept\nhello\n" {
		t.Fatalf("the restored environment: %+v %v", res, err)
	}
	if r, err := c2.Wait(ctx, e.ID, proc); err != nil || !strings.HasPrefix(r.Error, "lost:") {
		t.Errorf("the command the shutdown ended: %+v, %v; want it lost", r, err)
	}
	// The restored environment's sandbox, seen before the stop that ends it
	// (asked after the stop, the tracker could have had no sample of it).
	tr2 := d2.track()
	tr2.mustHaveSeen(t, 1)
	d2.stop() // --on-exit destroy
	noLeaks(t, tr)
	noLeaks(t, tr2)
}

// TestOnExitInvalid: serve refuses an --on-exit it does not know, naming the
// choices, before it opens anything.
func TestOnExitInvalid(t *testing.T) {
	_, stderr, status := cli(t, "serve", "--on-exit", "later", "--socket", filepath.Join(t.TempDir(), "s.sock"))
	if status == 0 || !strings.Contains(stderr, `--on-exit "later": give keep or destroy`) {
		t.Fatalf("status %d, stderr %q", status, stderr)
	}
}

// TestRestartRootRemoved: an environment kept by a daemon's stop is not
// restored by a daemon whose configuration no longer has its workspace under
// the tenant's workspace_roots: its tenant does not find it, the log says
// why, and its files stay for a daemon whose configuration allows it again,
// which restores it with them.
func TestRestartRootRemoved(t *testing.T) {
	testenv.SkipShort(t, "a daemon stopped and restarted with another configuration")
	dir := t.TempDir()
	d := startDaemon(t, dir)
	d.stop()
	d = &daemon{t: t, socket: d.socket, state: d.state, work: d.work, cfg: d.cfg, keep: true}
	d.start()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := d.client(e2eToken).Create(ctx, client.CreateRequest{Workspace: filepath.Join(d.work, "proj")})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := d.client(e2eToken).Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"sh", "-c", "echo kept > f"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("write a file: %+v %v", res, err)
	}
	d.stop()

	allowed, err := os.ReadFile(d.cfg)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other")
	os.MkdirAll(other, 0o755)
	narrowed := strings.Replace(string(allowed), "workspace_roots: ["+d.work+"]", "workspace_roots: ["+other+"]", 1)
	if narrowed == string(allowed) {
		t.Fatal("the test's configuration has no workspace_roots to narrow")
	}
	if err := os.WriteFile(d.cfg, []byte(narrowed), 0o600); err != nil {
		t.Fatal(err)
	}
	d = &daemon{t: t, socket: d.socket, state: d.state, work: d.work, cfg: d.cfg, keep: true}
	d.start()
	if list, err := d.client(e2eToken).List(ctx, nil); err != nil || len(list) != 0 {
		t.Errorf("List with the root removed = %+v, %v; want nothing", list, err)
	}
	if _, err := d.client(e2eToken).Get(ctx, e.ID); !client.IsCode(err, client.CodeNotFound) {
		t.Errorf("Get with the root removed: %v, want not found", err)
	}
	if m := daemonMetrics(t, d, "agentbox_environments_unrestored"); m != `agentbox_environments_unrestored{tenant="a"} 1` {
		t.Errorf("the operator's metrics of unrestored environments: %q", m)
	}
	d.stop()
	log, _ := os.ReadFile(filepath.Join(filepath.Dir(d.cfg), "serve.log"))
	if !strings.Contains(string(log), "not restoring") || !strings.Contains(string(log), e.ID) || !strings.Contains(string(log), "workspace_roots") {
		t.Errorf("the log does not say why %s is not restored:\n%s", e.ID, log)
	}

	if err := os.WriteFile(d.cfg, allowed, 0o600); err != nil {
		t.Fatal(err)
	}
	d = &daemon{t: t, socket: d.socket, state: d.state, work: d.work, cfg: d.cfg}
	d.start()
	defer d.stop()
	res, err := d.client(e2eToken).Exec(ctx, e.ID, client.ExecRequest{Argv: []string{"cat", "f", "hello.txt"}})
	if err != nil || res.Stdout != "kept\nhello\n" {
		t.Fatalf("the environment with its root allowed again: %+v %v", res, err)
	}
}
