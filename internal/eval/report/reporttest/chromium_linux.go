package reporttest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// Available reports whether Chromium is installed at ChromiumPath.
func Available() bool {
	fi, err := os.Stat(ChromiumPath)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// Browser is a headless Chromium; each Open is a new tab. Open is safe to call
// from several goroutines.
type Browser struct {
	ctx         context.Context // the browser's chromedp context
	allocCancel context.CancelFunc
	tmp         string // holds blank.html, the baseline of Page.Globals
}

// Start launches a headless Chromium: no sandbox (the tests run as root), no GPU,
// no background networking, shared memory in the temporary directory, a fresh
// profile that the allocator removes on Close. ctx bounds the start only; the
// browser lives until Close.
func Start(ctx context.Context) (*Browser, error) {
	if !Available() {
		return nil, ErrNoChromium
	}
	// The baseline must be a file:// page too: a secure context has globals
	// (caches, GPU, ...) that about:blank has not.
	tmp, err := os.MkdirTemp("", "reporttest-")
	if err != nil {
		return nil, fmt.Errorf("reporttest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "blank.html"), []byte("<!DOCTYPE html><title></title>"), 0o644); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("reporttest: %w", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	stop := context.AfterFunc(ctx, bcancel)
	err = chromedp.Do(bctx) // starts the browser and its first tab
	if !stop() && err == nil {
		err = context.Cause(ctx)
	}
	if err != nil {
		bcancel()
		acancel()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("reporttest: start chromium: %w", err)
	}
	return &Browser{ctx: bctx, allocCancel: acancel, tmp: tmp}, nil
}

// Close closes the browser, waiting up to 10 s for it to exit, and removes its
// profile.
func (b *Browser) Close() error {
	tctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	err := chromedp.Cancel(tctx)
	b.allocCancel()
	os.RemoveAll(b.tmp)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("reporttest: close chromium: %w", err)
	}
	return nil
}

// sentinel is logged after the probe, so the console reader knows it has seen
// every message that came before.
const sentinel = "reporttest: end of page messages"

// probe reads the rendered page. It runs through DevTools, which the page's
// Content-Security-Policy does not restrict. It first lays out every element
// that content-visibility: auto leaves unrendered away from the viewport (as
// scrolling through the page would): innerText leaves such content out.
const probe = `(() => {
  for (const e of document.querySelectorAll('*')) {
    if (getComputedStyle(e).contentVisibility === 'auto') e.style.contentVisibility = 'visible';
  }
  const t = document.getElementById('results');
  const rows = t ? Array.from(t.tBodies).flatMap(b => Array.from(b.rows)).map(r => ({
    task: r.dataset.task ?? '', attempt: r.dataset.attempt ?? '', outcome: r.dataset.outcome ?? '',
    cells: Array.from(r.cells).map(c => c.innerText.trim()),
  })) : null;
  return {
    url: location.href,
    title: document.title,
    table: !!t,
    rows: rows ?? [],
    text: document.body ? document.body.innerText : '',
    scripts: document.scripts.length,
    handlers: Array.from(document.querySelectorAll('*')).filter(e => Array.from(e.attributes).some(a => a.name.toLowerCase().startsWith('on'))).length,
    globals: Object.getOwnPropertyNames(window),
    resources: performance.getEntriesByType('resource').map(e => e.name),
  };
})()`

type probed struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	Table bool   `json:"table"`
	Rows  []struct {
		Task    string   `json:"task"`
		Attempt string   `json:"attempt"`
		Outcome string   `json:"outcome"`
		Cells   []string `json:"cells"`
	} `json:"rows"`
	Text      string   `json:"text"`
	Scripts   int      `json:"scripts"`
	Handlers  int      `json:"handlers"`
	Globals   []string `json:"globals"`
	Resources []string `json:"resources"`
}

// Open loads the HTML file at htmlPath in a new tab, which it closes before
// returning, and returns what the page rendered. A page without #results is
// returned with ErrNoTable.
func (b *Browser) Open(ctx context.Context, htmlPath string) (*Page, error) {
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		return nil, fmt.Errorf("reporttest: open %s: %w", htmlPath, err)
	}
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	tctx, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	wrap := func(err error) error {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return fmt.Errorf("reporttest: open %s: %w", u, err)
	}

	blankURL := (&url.URL{Scheme: "file", Path: filepath.Join(b.tmp, "blank.html")}).String()
	if err := chromedp.Do(tctx, chromedp.Navigate(blankURL)); err != nil {
		return nil, wrap(err)
	}
	blank, err := chromedp.Run(tctx, chromedp.Evaluate[[]string](`Object.getOwnPropertyNames(window)`))
	if err != nil {
		return nil, wrap(err)
	}

	var (
		mu      sync.Mutex
		console []string
		done    = make(chan struct{})
	)
	msgs := chromedp.Console(tctx) // subscribed now, before the page loads
	go func() {
		defer close(done)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Text == sentinel {
				return
			}
			mu.Lock()
			console = append(console, fmt.Sprintf("%s: %s", m.Type, m.Text))
			mu.Unlock()
		}
	}()

	if err := chromedp.Do(tctx, chromedp.Navigate(u)); err != nil {
		return nil, wrap(err)
	}
	p, err := chromedp.Run(tctx, chromedp.Evaluate[probed](probe))
	if err != nil {
		return nil, wrap(err)
	}
	if err := chromedp.Do(tctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("console.debug(%q)", sentinel))); err != nil {
		return nil, wrap(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		return nil, wrap(errors.New("the console did not report the end of the page's messages"))
	case <-ctx.Done():
		return nil, wrap(ctx.Err())
	}

	page := &Page{URL: p.URL, Title: p.Title, Text: p.Text, Scripts: p.Scripts,
		Handlers: p.Handlers, Resources: p.Resources, Console: console}
	for _, g := range p.Globals {
		if !slices.Contains(blank, g) {
			page.Globals = append(page.Globals, g)
		}
	}
	for _, r := range p.Rows {
		page.Rows = append(page.Rows, Row{Task: r.Task, Attempt: r.Attempt, Outcome: r.Outcome, Cells: r.Cells})
	}
	if !p.Table {
		return page, ErrNoTable
	}
	return page, nil
}

// RenderedTable starts Chromium, opens htmlPath and returns the cells' rendered
// text of each body row of #results, then closes the browser. It costs a browser
// start (about a second); a test that opens several pages should Start one
// Browser and Open each.
func RenderedTable(ctx context.Context, htmlPath string) ([][]string, error) {
	b, err := Start(ctx)
	if err != nil {
		return nil, err
	}
	p, err := b.Open(ctx, htmlPath)
	if cerr := b.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	rows := make([][]string, len(p.Rows))
	for i, r := range p.Rows {
		rows[i] = r.Cells
	}
	return rows, nil
}

// Tab is a page left open for a test to act on as a person would: typing and
// clicking go through the browser's input events (DevTools Input domain), so
// the page's own listeners run exactly as they would for a user.
type Tab struct {
	ctx    context.Context
	cancel context.CancelFunc
	// LoadTime is how long the navigation took, to the page's load event.
	LoadTime time.Duration

	mu      sync.Mutex
	console []string
}

// OpenTab loads the HTML file at htmlPath in a new tab and returns it; Close
// closes it. ctx bounds every action on the tab.
func (b *Browser) OpenTab(ctx context.Context, htmlPath string) (*Tab, error) {
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		return nil, fmt.Errorf("reporttest: open %s: %w", htmlPath, err)
	}
	u := (&url.URL{Scheme: "file", Path: abs}).String()
	tctx, cancel := chromedp.NewContext(b.ctx)
	context.AfterFunc(ctx, cancel)
	t := &Tab{ctx: tctx, cancel: cancel}
	if err := chromedp.Do(tctx); err != nil { // the tab exists before we listen
		cancel()
		return nil, fmt.Errorf("reporttest: open %s: %w", u, err)
	}
	msgs := chromedp.Console(tctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			t.mu.Lock()
			t.console = append(t.console, fmt.Sprintf("%s: %s", m.Type, m.Text))
			t.mu.Unlock()
		}
	}()
	start := time.Now()
	if err := chromedp.Do(tctx, chromedp.Navigate(u)); err != nil {
		cancel()
		return nil, fmt.Errorf("reporttest: open %s: %w", u, err)
	}
	t.LoadTime = time.Since(start)
	return t, nil
}

// Close closes the tab.
func (t *Tab) Close() { t.cancel() }

// Type focuses the first element matching the CSS selector and types text
// into it, key by key.
func (t *Tab) Type(selector, text string) error {
	if err := chromedp.Do(t.ctx, chromedp.SendKeys(selector, text)); err != nil {
		return fmt.Errorf("reporttest: type into %s: %w", selector, err)
	}
	return nil
}

// Click clicks the middle of the first visible element matching the CSS
// selector with the mouse. It first scrolls the element to the middle of the
// window and waits until its position holds for two frames: parts of a page
// laid out only near the viewport (content-visibility: auto) move what is
// below them as they render, and a click at the old position would miss.
func (t *Tab) Click(selector string) error {
	settle := fmt.Sprintf(`(async () => {
  const el = document.querySelector(%q);
  if (!el) return false;
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  let last = '';
  for (let i = 0; i < 20; i++) {
    el.scrollIntoView({block: 'center'});
    await frame();
    const b = el.getBoundingClientRect(), now = [b.x, b.y, b.width, b.height].join();
    if (now === last) return true;
    last = now;
  }
  return true;
})()`, selector)
	found, err := chromedp.Run(t.ctx, chromedp.Evaluate[bool](settle, chromedp.EvalAwaitPromise))
	if err == nil && !found {
		err = errors.New("no such element")
	}
	if err == nil {
		err = chromedp.Do(t.ctx, chromedp.Click(selector))
	}
	if err != nil {
		return fmt.Errorf("reporttest: click %s: %w", selector, err)
	}
	return nil
}

// Choose selects the option with value in the <select> matching the CSS
// selector, with the keyboard: it focuses the element and types the option's
// label, as a person picking from a focused list does.
func (t *Tab) Choose(selector, label string) error {
	if err := chromedp.Do(t.ctx, chromedp.Focus(selector), chromedp.KeyEvent(label)); err != nil {
		return fmt.Errorf("reporttest: choose %q in %s: %w", label, selector, err)
	}
	return nil
}

// Eval evaluates a JavaScript expression in the page (through DevTools, which
// the page's CSP does not restrict) and decodes its JSON value into out.
func Eval[T any](t *Tab, expr string) (T, error) {
	v, err := chromedp.Run(t.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		return v, fmt.Errorf("reporttest: evaluate: %w", err)
	}
	return v, nil
}

// Console returns the console messages the page logged so far.
func (t *Tab) Console() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.console)
}
