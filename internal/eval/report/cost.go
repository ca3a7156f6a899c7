package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"

	"github.com/agentbox/agentbox/internal/trace"
)

// unpriced reports whether the attempt's events.jsonl under root records a model
// response without a known price. It reads one line at a time and decodes only
// the lines of model responses; a missing or unreadable log says nothing (false):
// the attempt then keeps the cost the run recorded.
func unpriced(root *os.Root, dir string) bool {
	f, _, _ := open(root, attemptFile(dir, "events.jsonl"))
	if f == nil {
		return false
	}
	defer f.Close()
	br := bufio.NewReader(f)
	needle := []byte(`"type":"` + trace.ModelResponseReceived + `"`)
	for {
		line, err := readLine(br, LineCap)
		if err != nil && !errors.Is(err, errLong) && err != io.EOF {
			return false
		}
		if bytes.Contains(line, needle) {
			var e struct {
				Type trace.Type          `json:"type"`
				Data trace.ModelResponse `json:"data"`
			}
			if json.Unmarshal(line, &e) == nil && e.Type == trace.ModelResponseReceived && !e.Data.PriceKnown {
				return true
			}
		}
		if err == io.EOF {
			return false
		}
	}
}
