//go:build !linux

package reporttest

import "context"

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
