package image

import (
	"context"
	"fmt"
	"io"
	"os"
)

// runHelper runs the helper named h with os.Args[1:] and returns its exit code.
func runHelper(h string) int {
	var err error
	switch h {
	case "import":
		// import STORE SOURCE NAME
		var s *Store
		if s, err = OpenStore(os.Args[1], Options{}); err == nil {
			var r *Record
			if r, err = s.Import(context.Background(), os.Args[2], ImportOptions{Name: os.Args[3]}); err == nil {
				fmt.Println(r.ID)
			}
		}
	case "hold":
		_, err = io.Copy(io.Discard, os.Stdin)
	case "overlay":
		err = overlayHelper()
	default:
		err = fmt.Errorf("unknown helper %q", h)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}
