package report

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/eval/report/reporttest"
	"github.com/agentbox/agentbox/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// TestBrowser opens the written report in headless Chromium (one browser for
// every subtest) and asserts on what it rendered.
func TestBrowser(t *testing.T) {
	testenv.Require(t, reporttest.Available(), "needs Chromium at "+reporttest.ChromiumPath+" (apt-get install chromium)")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	b, err := reporttest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Chromium started in %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})

	dir, r := fixture(t)
	if err := Write(dir, r); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")

	t.Run("table", func(t *testing.T) {
		p, err := b.Open(ctx, page)
		if err != nil {
			t.Fatal(err)
		}
		var got [][]string
		for _, row := range p.Rows {
			got = append(got, append([]string{row.Task, row.Attempt, row.Outcome, "|"}, row.Cells...))
		}
		want := [][]string{
			{"calc-add", "1", "resolved", "|", "calc-add", "1", "resolved", "1/1", "2/2", "4", "1.2s", "3.4s", "$0.0123", ""},
			{"calc-add", "2", "tampered", "|", "calc-add", "2", "tampered", "0/0", "0/0", "4", "2.1s", "20ms", "$0.0200", "⚠ no test ran"},
			{"str-reverse", "1", "unresolved", "|", "str-reverse", "1", "unresolved", "0/0", "0/0", "50", "1m01s", "0ms", "$0.0000", "⚠ no test ran"},
			{"str-reverse", "2", "infra_error", "|", "str-reverse", "2", "infra_error", "0/0", "0/0", "0", "0ms", "0ms", "$0.0000", "⚠ no test ran"},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("rendered rows (-want +got):\n%s", d)
		}
		if !strings.Contains(p.Text, fixtureSummary) {
			t.Errorf("the summary line is not on the page:\n%s", p.Text)
		}
		if n := strings.Count(p.Text, "not recorded"); n != 7 {
			t.Errorf("%d visible \"not recorded\" notes, want 7 (4 for str-reverse #1, 3 for #2)", n)
		}
	})

	// The attacker's patch and log are on the page as visible text, and nothing
	// of theirs ran or loaded: no script element but the page's, no handler, no
	// global, the title unchanged, nothing fetched. The console is empty: the
	// page's own style sheet and script match their CSP hashes.
	t.Run("attacker text is inert", func(t *testing.T) {
		p, err := b.Open(ctx, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"<script>window.pwned=1;document.title='pwned'</script>", `<svg onload="window.pwned=5"></svg>`} {
			if !strings.Contains(p.Text, s) {
				t.Errorf("the page does not show %q as text", s)
			}
		}
		if p.Title != "agentbox eval run-1" {
			t.Errorf("title %q", p.Title)
		}
		if p.Scripts != 1 || p.Handlers != 0 || len(p.Globals) != 0 || len(p.Resources) != 0 {
			t.Errorf("live content: %d scripts, %d handlers, globals %q, loads %q", p.Scripts, p.Handlers, p.Globals, p.Resources)
		}
		if len(p.Console) != 0 {
			t.Errorf("console: %q", p.Console)
		}
	})

	// Suppose escaping failed: the same markup put into the page raw. With the
	// page's CSP it is in the DOM but does not run or load; without the CSP it
	// does, which shows that the probe would see it.
	t.Run("csp", func(t *testing.T) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		const attack = `<script>window.pwned=1;document.title='pwned'</script><img src="http://192.0.2.1/x.png"><p onclick="x()">`
		inject := func(name string, page string) string {
			path := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(path, []byte(strings.Replace(page, "</body>", attack+"</body>", 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			return path
		}
		withCSP, err := b.Open(ctx, inject("with.html", string(raw)))
		if err != nil {
			t.Fatal(err)
		}
		if withCSP.Scripts != 2 || withCSP.Handlers != 1 {
			t.Fatalf("the injection did not reach the DOM: %d scripts, %d handlers", withCSP.Scripts, withCSP.Handlers)
		}
		if withCSP.Title != "agentbox eval run-1" || len(withCSP.Globals) != 0 {
			t.Errorf("under the CSP the injection ran: title %q, globals %q", withCSP.Title, withCSP.Globals)
		}
		// Resource Timing lists the image even when the CSP refused it; the
		// console says it was refused, as it says the script was.
		console := strings.Join(withCSP.Console, "\n")
		for _, refusal := range []string{
			"Executing inline script violates the following Content Security Policy",
			"Loading the image 'http://192.0.2.1/x.png' violates the following Content Security Policy",
		} {
			if !strings.Contains(console, refusal) {
				t.Errorf("no CSP refusal %q; console:\n%s", refusal, console)
			}
		}

		noCSP := strings.Replace(string(raw), `http-equiv="Content-Security-Policy"`, `name="x"`, 1)
		without, err := b.Open(ctx, inject("without.html", noCSP))
		if err != nil {
			t.Fatal(err)
		}
		if without.Title != "pwned" || !cmp.Equal(without.Globals, []string{"pwned"}) ||
			!cmp.Equal(without.Resources, []string{"http://192.0.2.1/x.png"}) || strings.Contains(strings.Join(without.Console, "\n"), "Content Security Policy") {
			t.Errorf("without the CSP the injection should run: title %q, globals %q, loads %q, console %q",
				without.Title, without.Globals, without.Resources, without.Console)
		}
	})

	// Regression test for hostile transcripts: the model's words hold <script>,
	// a tool's result </script><img onerror> and <svg onload>; opened, they are
	// text, and the console is empty (no CSP refusal: nothing tried to run).
	t.Run("hostile transcript", func(t *testing.T) {
		dir, r, evil := synthetic(t, 4, 2)
		if err := Write(dir, r); err != nil {
			t.Fatal(err)
		}
		tab, err := b.OpenTab(ctx, filepath.Join(dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		defer tab.Close()
		openTranscript(t, tab, r, evil)
		if c := tab.Console(); len(c) != 0 {
			t.Errorf("console: %q", c)
		}
	})

	t.Run("no table", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "plain.html")
		if err := os.WriteFile(path, []byte("<!DOCTYPE html><title>x</title><p>no table"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Open(ctx, path); !errors.Is(err, reporttest.ErrNoTable) {
			t.Errorf("Open of a page without #results: %v, want ErrNoTable", err)
		}
	})

	// RenderedTable, the one-call helper, starts a browser of its own.
	t.Run("RenderedTable", func(t *testing.T) {
		start := time.Now()
		rows, err := reporttest.RenderedTable(ctx, page)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("RenderedTable took %v", time.Since(start).Round(time.Millisecond))
		if len(rows) != 4 || rows[1][0] != "calc-add" || rows[1][2] != "tampered" || rows[3][2] != "infra_error" {
			t.Errorf("rows %q", rows)
		}
	})
}
