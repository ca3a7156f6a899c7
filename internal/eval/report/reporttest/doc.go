// Package reporttest opens a report.html in headless Chromium, for tests: it loads
// the page from a file:// URL and returns what the browser rendered (the rows of
// the #results table, the title, the visible text, the script elements and event
// handler attributes in the DOM, the globals the page defined, what it tried to
// load, and its console, where Content-Security-Policy violations appear), so a test asserts
// on the page a person sees rather than on the HTML text.
//
// It drives Debian's Chromium (ChromiumPath) through chromedp and does not install
// it. It is for tests only: it links chromedp, which the agentbox binary must not.
package reporttest

import "errors"

// ChromiumPath is the browser the package drives: Debian's chromium package.
const ChromiumPath = "/usr/bin/chromium"

var (
	// ErrNoChromium: Chromium is not installed at ChromiumPath.
	ErrNoChromium = errors.New("reporttest: no Chromium at " + ChromiumPath)
	// ErrNoTable: the page has no element with id "results".
	ErrNoTable = errors.New("reporttest: the page has no #results table")
	// ErrUnsupported: the package drives Chromium on Linux only.
	ErrUnsupported = errors.New("reporttest: only supported on Linux")
)

// Page is what the browser rendered of a page.
type Page struct {
	URL   string
	Title string
	// Rows are the body rows of #results, in order.
	Rows []Row
	// Text is the page's visible text (document.body.innerText): what is inside
	// a closed <details> is not in it.
	Text string
	// Scripts counts the <script> elements in the DOM; Handlers the elements with
	// an on* attribute. Attacker markup that became live would add to either.
	Scripts  int
	Handlers int
	// Globals are the window properties the page has that a blank page has not:
	// what its scripts defined.
	Globals []string
	// Resources are the URLs the page tried to load (Resource Timing): images,
	// styles, scripts, frames, whether or not its Content-Security-Policy let the
	// load through (Console then has the refusal). The page itself is not among
	// them.
	Resources []string
	// Console holds the page's console messages, uncaught exceptions and browser
	// log entries, such as "Refused to execute inline script because it violates
	// the following Content Security Policy directive".
	Console []string
}

// Row is one row of #results.
type Row struct {
	// Task, Attempt and Outcome are its data-task, data-attempt and data-outcome
	// attributes.
	Task, Attempt, Outcome string
	// Cells are its cells' rendered text (innerText, trimmed).
	Cells []string
}
