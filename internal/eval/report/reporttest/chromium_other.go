//go:build !linux

package reporttest

import (
	"context"
	"time"
)

// Available reports whether Chromium is installed at ChromiumPath.
func Available() bool { return false }

// Browser is a headless Chromium.
type Browser struct{}

// Start launches a headless Chromium.
func Start(ctx context.Context) (*Browser, error) { return nil, ErrUnsupported }

// Close stops the browser.
func (b *Browser) Close() error { return ErrUnsupported }

// Open loads the HTML file at htmlPath in a new tab and returns what it rendered.
func (b *Browser) Open(ctx context.Context, htmlPath string) (*Page, error) {
	return nil, ErrUnsupported
}

// RenderedTable starts Chromium, opens htmlPath and returns the cells of the rows
// of #results.
func RenderedTable(ctx context.Context, htmlPath string) ([][]string, error) {
	return nil, ErrUnsupported
}

// Tab is a page left open for a test to act on.
type Tab struct{ LoadTime time.Duration }

// OpenTab loads the HTML file at htmlPath in a new tab.
func (b *Browser) OpenTab(ctx context.Context, htmlPath string) (*Tab, error) {
	return nil, ErrUnsupported
}

// Close closes the tab.
func (t *Tab) Close() {}

// Type types text into the element matching selector.
func (t *Tab) Type(selector, text string) error { return ErrUnsupported }

// Click clicks the element matching selector.
func (t *Tab) Click(selector string) error { return ErrUnsupported }

// Choose selects an option of the <select> matching selector by its label.
func (t *Tab) Choose(selector, label string) error { return ErrUnsupported }

// Eval evaluates a JavaScript expression in the page.
func Eval[T any](t *Tab, expr string) (T, error) {
	var v T
	return v, ErrUnsupported
}

// Console returns the console messages the page logged so far.
func (t *Tab) Console() []string { return nil }
