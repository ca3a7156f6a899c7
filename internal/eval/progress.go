package eval

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/agentbox/agentbox/internal/eval/report"
)

// counts is what both progress displays track.
type counts struct {
	mu                   sync.Mutex
	total, done, resolve int
	start                time.Time
	ran                  int // attempts finished in this process (for the ETA)
}

func (c *counts) begin(total, done, resolved int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total, c.done, c.resolve, c.start = total, done, resolved, time.Now()
}

// finish counts a, and returns the new counts, the elapsed time and the
// estimated time left (from the mean time of the attempts run so far).
func (c *counts) finish(a report.Attempt) (done, total, resolved int, elapsed, eta time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done++
	c.ran++
	if a.Resolved {
		c.resolve++
	}
	elapsed = time.Since(c.start)
	eta = elapsed / time.Duration(c.ran) * time.Duration(c.total-c.done)
	return c.done, c.total, c.resolve, elapsed, eta
}

// Lines reports progress as one plain line per finished attempt: for logs and
// pipes, where a redrawn bar would be noise.
type Lines struct {
	w io.Writer
	c counts
}

// NewLines returns a Progress writing lines to w.
func NewLines(w io.Writer) *Lines { return &Lines{w: w} }

func (l *Lines) Begin(total, done, resolved int) {
	l.c.begin(total, done, resolved)
	if done > 0 {
		fmt.Fprintf(l.w, "resuming: %d of %d attempts already done (%d resolved)\n", done, total, resolved)
	}
}

func (l *Lines) Started(string, int) {}

func (l *Lines) Finished(a report.Attempt) {
	done, total, resolved, elapsed, eta := l.c.finish(a)
	if a.Outcome == "" {
		a.Outcome = report.Classify(a)
	}
	fmt.Fprintf(l.w, "[%d/%d] %s #%d %s in %s | resolved %d | elapsed %s | eta %s\n", done, total, a.Task, a.Attempt,
		a.Outcome, round(time.Duration(a.DurationMS)*time.Millisecond), resolved, round(elapsed), round(eta))
}

// Bar draws a live progress bar on a terminal: done / total, resolved so far,
// elapsed time and ETA.
type Bar struct {
	p   *mpb.Progress
	bar *mpb.Bar
	c   counts
	w   io.Writer
}

// NewBar returns a Progress drawing on w, a terminal. Wait must be called once
// the run is over.
func NewBar(w io.Writer) *Bar { return &Bar{w: w} }

func (b *Bar) Begin(total, done, resolved int) {
	b.c.begin(total, done, resolved)
	// WithAutoRefresh draws on a writer that is not a terminal too (--progress bar).
	b.p = mpb.New(mpb.WithOutput(b.w), mpb.WithWidth(40), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh())
	b.bar = b.p.AddBar(int64(total),
		mpb.PrependDecorators(
			decor.Name("eval "),
			decor.CountersNoUnit("%d/%d"),
			decor.Any(func(decor.Statistics) string {
				b.c.mu.Lock()
				defer b.c.mu.Unlock()
				return fmt.Sprintf(" resolved %d", b.c.resolve)
			}, decor.WCSyncSpaceR),
		),
		mpb.AppendDecorators(
			decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace),
			decor.Name(" eta "),
			decor.Any(func(decor.Statistics) string {
				b.c.mu.Lock()
				defer b.c.mu.Unlock()
				if b.c.ran == 0 {
					return "?"
				}
				el := time.Since(b.c.start)
				return round(el / time.Duration(b.c.ran) * time.Duration(b.c.total-b.c.done)).String()
			}),
		),
	)
	b.bar.SetCurrent(int64(done))
}

func (b *Bar) Started(string, int) {}

func (b *Bar) Finished(a report.Attempt) {
	b.c.finish(a)
	b.bar.Increment()
}

// Wait ends the bar (completing it if the run was cut short) and waits for its
// last redraw.
func (b *Bar) Wait() {
	if b.p == nil {
		return
	}
	if !b.bar.Completed() {
		b.bar.Abort(false)
	}
	b.p.Wait()
}

func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
