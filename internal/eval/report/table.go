package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Table prints the results table and the summary line as aligned plain text, for
// the terminal. Task ids are cleaned of control characters (oneLine).
func Table(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(columns, "\t"))
	for _, a := range r.Attempts {
		cells := row(a)
		cells[0] = oneLine(cells[0], 60)
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w, summaryLine(r, Summarize(r.Attempts)))
}
