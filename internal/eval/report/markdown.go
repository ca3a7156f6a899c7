package report

import (
	"fmt"
	"io"
	"strings"
)

// markdown writes report.md: a header, the results table and the summary line.
func markdown(w io.Writer, r *Report, s Summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# agentbox eval %s\n\n", mdCell(r.Run))
	fmt.Fprintf(&b, "suite %s · policy %s", mdCell(r.Suite), mdCell(r.Policy))
	if r.Model != "" {
		fmt.Fprintf(&b, " · model %s", mdCell(r.Model))
	}
	if !r.StartedAt.IsZero() {
		fmt.Fprintf(&b, " · started %s", r.StartedAt.UTC().Format("2006-01-02 15:04:05Z"))
	}
	b.WriteString("\n\n|")
	for _, c := range columns {
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n|")
	for _, num := range numeric {
		if num {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, a := range r.Attempts {
		b.WriteString("|")
		for _, c := range row(a) {
			b.WriteString(" " + mdCell(c) + " |")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n**%s**\n", mdEscaper.Replace(oneLine(summaryLine(r, s), 1000)))
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscaper keeps a value inside its cell and inert: a pipe would split the cell,
// and many Markdown viewers render inline HTML.
var mdEscaper = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "&", "&amp;",
	"`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "\\", `\\`)

func mdCell(s string) string { return mdEscaper.Replace(oneLine(s, 200)) }
