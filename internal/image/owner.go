package image

// Layer files are owned on the host by systemd's "foreign UID range"
// (systemd's docs/UIDS-GIDS.md): a file the archive gives to uid (gid) n is owned
// by IDBase+n. No user, no sandbox (agentbox picks sandbox ids below 1<<30) and no
// subordinate range of a normal host uses these ids, so a layer file is nobody's
// on the host, and a set-ID or capability bit could not grant anything even if it
// were kept. A user namespace or an idmapped mount that maps IDBase+n to the id a
// sandbox should see shows the files with their image ownership.
const (
	IDBase  = 0x7FFE0000
	IDCount = 65536
	// nobodyID is what an id outside [0, IDCount) becomes (and is recorded).
	nobodyID = 65534
)

// hostID maps an archive id to its owner on the host. ok is false if the id was
// out of range and replaced by nobody's.
func hostID(id int) (host int, ok bool) {
	if id < 0 || id >= IDCount {
		return IDBase + nobodyID, false
	}
	return IDBase + id, true
}

// imageID maps a host owner back to the archive id (for exporting a build
// sandbox's upper layer). An owner outside the foreign range becomes nobody.
func imageID(host uint32) int {
	if host < IDBase || host >= IDBase+IDCount {
		return nobodyID
	}
	return int(host - IDBase)
}
