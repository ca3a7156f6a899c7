package image

// Limits bound what one import may write. The zero value of a field means its
// default. Sizes are logical (a sparse file counts its full length), so a small
// archive cannot declare a file that fills the disk.
type Limits struct {
	// Entries is the most archive entries in one layer (default 1,000,000).
	Entries int
	// FileSize is the largest file, in bytes (default 8 GiB).
	FileSize int64
	// LayerSize is the most file bytes in one layer (default 32 GiB).
	LayerSize int64
	// Layers is the most layers in one image (default and maximum 500, overlayfs's
	// limit on lower layers).
	Layers int
}

// maxLayers is overlayfs's OVL_MAX_STACK: the most lower layers one mount takes.
const maxLayers = 500

func (l Limits) withDefaults() Limits {
	if l.Entries <= 0 {
		l.Entries = 1_000_000
	}
	if l.FileSize <= 0 {
		l.FileSize = 8 << 30
	}
	if l.LayerSize <= 0 {
		l.LayerSize = 32 << 30
	}
	if l.Layers <= 0 || l.Layers > maxLayers {
		l.Layers = maxLayers
	}
	return l
}
