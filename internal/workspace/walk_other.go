//go:build !linux

package workspace

func diffTrees(string, string, bool, DiffOptions) ([]byte, Summary, error) {
	return nil, Summary{}, ErrUnsupported
}
