package image

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// LayerInfo describes one unpacked layer: what its archive held and what the
// unpacker did not reproduce as the archive asked.
type LayerInfo struct {
	// DiffID is the digest of the uncompressed layer archive (the OCI diff_id),
	// which names the layer in the store.
	DiffID v1.Hash `json:"diff_id"`
	// Size is the length of the uncompressed archive; Bytes the logical size of its
	// files; Entries the number of its entries.
	Size    int64 `json:"size"`
	Bytes   int64 `json:"bytes"`
	Entries int   `json:"entries"`
	// Adjustments lists (up to maxAdjustments of) the entries changed on the way
	// in; Adjusted counts them all.
	Adjustments []Adjustment `json:"adjustments,omitempty"`
	Adjusted    int          `json:"adjusted,omitempty"`
}

// Kinds of Adjustment.
const (
	// AdjSetID: set-user-ID or set-group-ID bits cleared from a non-directory.
	AdjSetID = "setid"
	// AdjDevice: a device node or fifo not created.
	AdjDevice = "device"
	// AdjXattr: an extended attribute not set (namespace not kept, or refused by
	// the file system).
	AdjXattr = "xattr"
	// AdjOwner: a uid or gid outside [0, 65536) replaced by nobody's.
	AdjOwner = "owner"
	// AdjIgnored: an entry with no meaning here (an aufs ".wh..wh." metadata entry).
	AdjIgnored = "ignored"
)

// Adjustment is one entry not reproduced exactly, and why.
type Adjustment struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

// maxAdjustments bounds the list kept in a LayerInfo.
const maxAdjustments = 1000

func (li *LayerInfo) adjust(path, kind, detail string) {
	li.Adjusted++
	if len(li.Adjustments) < maxAdjustments {
		li.Adjustments = append(li.Adjustments, Adjustment{Path: path, Kind: kind, Detail: detail})
	}
}
