package api

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/env"
)

// cuttingProxy forwards TCP connections to target but closes each one after it has
// carried cut bytes of response: a connection that breaks mid-stream, often in the
// middle of an event.
type cuttingProxy struct {
	ln    net.Listener
	cut   int
	mu    sync.Mutex
	conns int
}

func newCuttingProxy(t *testing.T, target string, cut int) *cuttingProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cuttingProxy{ln: ln, cut: cut}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns++
			p.mu.Unlock()
			go func() {
				defer c.Close()
				b, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer b.Close()
				go io.Copy(b, c)
				io.CopyN(c, b, int64(p.cut))
			}()
		}
	}()
	return p
}

func (p *cuttingProxy) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns
}

// TestEventsResumeAcrossCutConnections: the connection is cut every 900 bytes, in
// the middle of events; the client reconnects with Last-Event-ID and gets every
// event exactly once, in order.
func TestEventsResumeAcrossCutConnections(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.client(tokA)
	e, err := a.Create(ctx, client.CreateRequest{Preset: "t"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	proc, err := a.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"count", fmt.Sprint(n), "1ms"}})
	if err != nil {
		t.Fatal(err)
	}
	px := newCuttingProxy(t, strings.TrimPrefix(h.ts.URL, "http://"), 900)
	pc, err := client.New(client.Options{URL: "http://" + px.ln.Addr().String(), Token: tokA,
		Reconnects: 5, ReconnectDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	st := pc.Events(ctx, e.ID, proc, 0)
	var got []client.Event
	for {
		ev, err := st.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(got), err)
		}
		got = append(got, ev)
	}
	if len(got) != n+1 {
		t.Fatalf("got %d events, want %d", len(got), n+1)
	}
	for i, ev := range got[:n] {
		if ev.Seq != int64(i+1) || ev.Kind != "stdout" || string(ev.Data) != fmt.Sprintf("line %d\n", i+1) {
			t.Fatalf("event %d = %+v", i, ev)
		}
	}
	if last := got[n]; last.Kind != "exit" || last.Seq != n+1 || last.Result == nil {
		t.Fatalf("last event %+v", last)
	}
	if st.Reconns < 10 || px.connections() < 10 {
		t.Fatalf("only %d reconnections over %d connections: the test did not cut the stream", st.Reconns, px.connections())
	}
	t.Logf("%d events over %d connections", len(got), px.connections())
}

// TestEventsLastEventID: the raw protocol: ids are sequence numbers; Last-Event-ID
// and ?after= skip what the client has (the greater of the two wins).
func TestEventsLastEventID(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	a := h.client(tokA)
	e, _ := a.Create(ctx, client.CreateRequest{Preset: "t"})
	proc, err := a.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"count", "5", "0s"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Wait(ctx, e.ID, proc); err != nil {
		t.Fatal(err)
	}
	path := "/v1/environments/" + e.ID + "/processes/" + proc + "/events"
	for _, tc := range []struct {
		name  string
		query string
		hdr   []string
		ids   []string
	}{
		{"from the start", "", nil, []string{"1", "2", "3", "4", "5", "6"}},
		{"Last-Event-ID", "", []string{"Last-Event-ID", "3"}, []string{"4", "5", "6"}},
		{"after", "?after=5", nil, []string{"6"}},
		{"both: the greater", "?after=2", []string{"Last-Event-ID", "4"}, []string{"5", "6"}},
		{"past the end", "?after=6", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A stream that replays the exit event ends after it.
			ctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			var body string
			if tc.ids != nil {
				var st int
				var hdr http.Header
				st, hdr, body = h.doCtx(ctx, "GET", path+tc.query, tokA, tc.hdr...)
				if st != 200 || hdr.Get("Content-Type") != "text/event-stream" {
					t.Fatalf("status %d %v", st, hdr)
				}
			} else {
				// Past the end it follows the process: cut 300 ms after its
				// headers (a late event could only make the test pass wrongly).
				req, _ := http.NewRequestWithContext(ctx, "GET", h.ts.URL+path+tc.query, nil)
				req.Header.Set("Authorization", "Bearer "+tokA)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
					t.Fatalf("status %d %v", resp.StatusCode, resp.Header)
				}
				time.AfterFunc(300*time.Millisecond, cancel)
				b, _ := io.ReadAll(resp.Body)
				body = string(b)
			}
			var ids []string
			for _, line := range strings.Split(body, "\n") {
				if id, ok := strings.CutPrefix(line, "id: "); ok {
					ids = append(ids, id)
				}
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.ids) {
				t.Fatalf("ids %v, want %v\n%s", ids, tc.ids, body)
			}
			if len(tc.ids) > 0 && !strings.Contains(body, "event: exit\ndata: {\"seq\":6,\"kind\":\"exit\"") {
				t.Fatalf("no exit event:\n%s", body)
			}
		})
	}
}

// earlyEnd ends every event stream after its first event, as a service does when
// the environment is destroyed under it.
type earlyEnd struct{ *memService }

func (s earlyEnd) Events(ctx context.Context, o env.Owner, id, pid string, after int64) (<-chan env.Event, error) {
	in, err := s.memService.Events(ctx, o, id, pid, after)
	if err != nil {
		return nil, err
	}
	out := make(chan env.Event, 1)
	go func() {
		defer close(out)
		if ev, ok := <-in; ok {
			out <- ev
		}
	}()
	return out, nil
}

// TestEventsErrorEvent: a stream that ends without the exit event ends with an
// "error" event; the client returns it rather than reconnecting forever.
func TestEventsErrorEvent(t *testing.T) {
	h := newHarness(t, func(m *memService) env.Service { return earlyEnd{m} })
	ctx := context.Background()
	a := h.client(tokA)
	e, _ := a.Create(ctx, client.CreateRequest{Preset: "t"})
	proc, err := a.Start(ctx, e.ID, client.ExecRequest{Argv: []string{"count", "3", "0s"}})
	if err != nil {
		t.Fatal(err)
	}
	st := a.Events(ctx, e.ID, proc, 0)
	if ev, err := st.Next(); err != nil || ev.Seq != 1 {
		t.Fatalf("first event %+v %v", ev, err)
	}
	_, err = st.Next()
	if !client.IsCode(err, "ENOENT") || st.Reconns != 0 {
		t.Fatalf("err %v after %d reconnections", err, st.Reconns)
	}
}
