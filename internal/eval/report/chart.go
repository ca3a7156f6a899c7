package report

import (
	"fmt"
	"math"
)

// chart is an inline SVG chart of the page, laid out here so the page needs no
// script to draw it: rectangles and text at computed positions, each rectangle
// with a tooltip. Note replaces the chart when there is nothing to draw.
type chart struct {
	ID, Title string
	W, H      int
	Bars      []bar
	Labels    []label
	Note      string
}

type bar struct {
	X, Y, W, H string
	Class, Tip string
}

type label struct {
	X, Y, Anchor, Text string
}

func px(v float64) string { return fmt.Sprintf("%.1f", v) }

// resolvedChart has one row per task: the share of its attempts that resolved,
// in green, the rest in grey.
func resolvedChart(tasks []TaskStats) chart {
	const row, labelW, barW, countW = 16, 180, 320, 60
	c := chart{ID: "chart-resolved", Title: "Resolved attempts per task", W: labelW + barW + countW, H: row*len(tasks) + 4}
	if len(tasks) == 0 {
		c.Note = "no attempts"
		return c
	}
	for i, t := range tasks {
		y := float64(i*row + 2)
		share := float64(t.Resolved) / float64(t.Attempts)
		tip := fmt.Sprintf("%s: %d/%d resolved", t.Task, t.Resolved, t.Attempts)
		c.Labels = append(c.Labels,
			label{X: px(labelW - 6), Y: px(y + 11), Anchor: "end", Text: oneLine(t.Task, 28)},
			label{X: px(labelW + barW + 6), Y: px(y + 11), Anchor: "start", Text: fmt.Sprintf("%d/%d", t.Resolved, t.Attempts)})
		if share > 0 {
			c.Bars = append(c.Bars, bar{X: px(labelW), Y: px(y), W: px(share * barW), H: px(row - 3), Class: "res", Tip: tip})
		}
		if share < 1 {
			c.Bars = append(c.Bars, bar{X: px(labelW + share*barW), Y: px(y), W: px((1 - share) * barW), H: px(row - 3), Class: "unres", Tip: tip})
		}
	}
	return c
}

// histogram draws the distribution of values in bins equal-width bins from 0 to
// the largest value; format labels a value.
func histogram(id, title string, values []float64, format func(float64) string) chart {
	const bins, w, h, left, bottom = 20, 420, 150, 36, 20
	c := chart{ID: id, Title: title, W: w, H: h}
	hi := 0.0
	for _, v := range values {
		hi = max(hi, v)
	}
	if len(values) == 0 || hi <= 0 {
		return c
	}
	counts := make([]int, bins)
	for _, v := range values {
		counts[min(bins-1, int(math.Floor(v/hi*bins)))]++
	}
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	plotW, plotH := float64(w-left-4), float64(h-bottom-8)
	bw := plotW / bins
	for i, n := range counts {
		if n == 0 {
			continue
		}
		bh := plotH * float64(n) / float64(top)
		lo, up := hi*float64(i)/bins, hi*float64(i+1)/bins
		c.Bars = append(c.Bars, bar{X: px(left + float64(i)*bw + 0.5), Y: px(8 + plotH - bh), W: px(bw - 1), H: px(bh), Class: "bin",
			Tip: fmt.Sprintf("%s to %s: %d attempts", format(lo), format(up), n)})
	}
	c.Labels = []label{
		{X: px(left - 4), Y: "16", Anchor: "end", Text: fmt.Sprint(top)},
		{X: px(left - 4), Y: px(8 + plotH), Anchor: "end", Text: "0"},
		{X: px(left), Y: px(h - 4), Anchor: "start", Text: format(0)},
		{X: px(w - 4), Y: px(h - 4), Anchor: "end", Text: format(hi)},
	}
	return c
}

// charts are the page's charts: resolved per task, and the distributions of
// cost and agent time over the attempts.
func charts(r *Report, tasks []TaskStats) []chart {
	var costs, times []float64
	unknown := 0
	for _, a := range r.Attempts {
		if a.CostUnknown {
			unknown++
		} else {
			costs = append(costs, a.CostUSD)
		}
		times = append(times, float64(a.AgentMS))
	}
	cost := histogram("chart-cost", "Cost per attempt", costs, usdShort)
	switch {
	case len(r.Attempts) > 0 && unknown == len(r.Attempts):
		cost.Note = "cost unknown: no prices for the model"
	case cost.Bars == nil:
		cost.Note = "no attempt has a cost"
	case unknown > 0:
		cost.Title += fmt.Sprintf(" (%d of %d attempts without prices left out)", unknown, len(r.Attempts))
	}
	tm := histogram("chart-time", "Agent time per attempt", times, func(v float64) string { return ms(int64(v)) })
	if tm.Bars == nil {
		tm.Note = "no attempt took any time"
	}
	return []chart{resolvedChart(tasks), cost, tm}
}

func usdShort(v float64) string {
	if v < 0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}
