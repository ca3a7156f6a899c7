package task

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"
)

// archiveFile is one file of a txtar archive.
type archiveFile struct {
	Name string
	Data []byte
}

// parseTxtar reads the txtar format of golang.org/x/tools/txtar: free text, then
// files, each introduced by a line "-- NAME --" and running to the next such line.
// The built-in tasks are stored this way because a task's repo/ may hold a go.mod
// and Go files, which the go command would otherwise treat as part of this module
// (and go:embed would skip as another module).
func parseTxtar(data []byte) ([]archiveFile, error) {
	var files []archiveFile
	seen := map[string]bool{}
	var cur *archiveFile
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		if name, ok := txtarMarker(line); ok {
			if !fs.ValidPath(name) || name == "." {
				return nil, fmt.Errorf("txtar: invalid file name %q", name)
			}
			if seen[name] {
				return nil, fmt.Errorf("txtar: %q appears twice", name)
			}
			seen[name] = true
			files = append(files, archiveFile{Name: name, Data: []byte{}})
			cur = &files[len(files)-1]
			continue
		}
		if cur != nil {
			cur.Data = append(cur.Data, line...)
		}
	}
	return files, nil
}

func txtarMarker(line []byte) (string, bool) {
	s := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
	if !strings.HasPrefix(s, "-- ") || !strings.HasSuffix(s, " --") || len(s) < len("-- x --") {
		return "", false
	}
	return strings.TrimSpace(s[3 : len(s)-3]), true
}
