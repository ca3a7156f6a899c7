// Package image keeps root file systems for sandboxes: an image is a stack of
// read-only layers in a content-addressed Store, each layer unpacked once (named
// by its diff_id, the digest of its uncompressed archive) and shared by every
// image that has it. Images come from a `docker save` archive, an OCI archive or
// layout, an OCI registry (go-containerregistry), a Debian suite bootstrapped with
// mmdebstrap, or a build spec (ParseSpec, Build): a base, then apt, npm,
// go_modules, copy and run steps, each a layer cached under the hash of its
// parent and its definition, so a changed step rebuilds only from there. A built
// image's record keeps what went in: the spec, each step's key and layer, the
// digest of what a copy step read, and the installed Debian packages.
//
// # Unpacking
//
// Every layer archive is hostile. Each entry is written below the layer
// directory with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) on the way and a
// fresh O_EXCL/O_NOFOLLOW (or *at) create at the end, after unlinking what was
// there: nothing is ever written through a link. Names with a ".." component are
// refused; absolute names land inside the layer (as GNU tar and container
// runtimes extract them); a file whose parent in the same layer is a symlink is
// refused (no runtime's archive has one: tar records files at their real path).
// Hard links reach only earlier entries of the same layer. Devices and fifos are
// recorded, never created; the only special files made are overlayfs whiteouts,
// from OCI ".wh." entries. Set-ID bits are cleared from everything but
// directories and recorded; only user.* xattrs are kept, never user.overlay.*
// (security.capability and the rest are recorded). Entry count, file size and
// layer size are bounded (Limits, logical sizes, so a sparse file counts whole);
// sparse files stay sparse. A layer is checked against its diff_id before it is
// published. LayerInfo.Adjustments lists every entry not reproduced as asked.
//
// # Ownership
//
// A file the archive gives to uid (gid) n is owned on the host by IDBase+n, in
// systemd's foreign uid range: nobody on the host, no sandbox, and no subordinate
// range uses those ids. Images are stored this way once; an idmapped mount shows
// them to each sandbox. The store needs root (OpenStore returns ErrNotRoot).
//
// # How a sandbox mounts an image
//
// Package sandbox (not this package) does this (sandbox.Config.Image);
// TestOverlayMount does the same with a helper in place of the init:
//
//  1. The host opens the image (Store.Open) and keeps it open, which keeps its
//     layers from GC, until the sandbox is destroyed (Image.Close).
//  2. The host, as root, makes one user namespace mapping IDBase+uid to the
//     sandbox's host uid (and IDBase+gid to its gid), where uid, gid =
//     Image.IDs() (the image's configured user, usually root), and one detached
//     clone of Image.LayersDir (open_tree, recursive) idmapped through it with
//     mount_setattr(IDMAP, RDONLY, NOSUID, NODEV). One mount serves every
//     layer. It passes the clone to the init as a descriptor
//     (nsinit.Spec.Image.Layers), as it passes the workspace's lower layer, and
//     the layers' paths in the tree, top first (Spec.Image.Lowers, each a
//     Layer.Rel; 500 paths of about 90 bytes fit the Spec's 1 MiB). The
//     sandbox maps only its own user (1000 inside), so the image user's files
//     are the sandbox user's (writable by copy-up into the private upper
//     layer) and every other id shows as nobody; a sandbox that maps a range
//     would map IDBase+n to its base+n instead.
//  3. The host makes the private upper and work directories on the sandbox's
//     size-limited tmpfs state directory, as for the workspace.
//  4. The init attaches the tree in its staging area and calls
//     fsopen("overlay"), one fsconfig "lowerdir+" per path of Lowers (no
//     option-string limit, where mount(2)'s one page holds about 40 such
//     paths; Linux 6.8), upperdir, workdir and the "userxattr" flag (whiteouts
//     are 0/0 character devices, opaque directories carry
//     user.overlay.opaque=y), then fsmount(NOSUID|NODEV), and moves the mount
//     to the new root in place of the tmpfs and the host's system directories.
//     It needs CAP_DAC_OVERRIDE in its namespace, which it has: overlayfs's
//     work directory is mode 0. The generated /etc files (bound over the
//     image's), /dev, /proc, /tmp and /workspace are mounted on top, each mount
//     point first made a real directory (an image's link there is replaced in
//     the upper layer, never followed), then pivot_root.
//  5. The command's environment and working directory start from
//     Image.Config (Env, WorkingDir); Entrypoint and Cmd only when no command
//     is given.
//
// A layer directory is never written: the overlay's lower layers are read-only
// and the idmapped tree is mounted read-only. Starting from an image costs the
// same whatever its size: nothing is copied. Overlayfs takes at most 500 lower
// layers; larger images are refused (Limits.Layers), not flattened.
//
// # Host bases
//
// An Image.Host (a build spec with base "host") has its layers over the host's
// HostDirs and HostEtc, the part of the host the namespace sandbox shows. A
// lower layer cannot hold the host's directories (overlayfs does not look
// through mounts in a lower layer), so the init puts a skeleton below the
// layers (the host's symlinks, empty directories to mount on) and mounts one
// overlay per real host directory (/usr) on the root's: the layers' copies of
// it over a detached, read-only, idmapped clone of the host's, with the root's
// upper directory's copy as its upper. The host's root-owned files are the
// image root's (copied up they are owned as layer files are); nothing writes
// the clone. A build's cache key for a host base is HostIdentity (dpkg's
// status and the metadata of every directory under HostDirs and of HostEtc),
// so a host whose packages or /usr/local change rebuilds; apt steps are
// refused (the host's package database is not part of the base).
//
// # What it does not do
//
// It mounts nothing and starts no sandbox: the build steps that run commands
// need a Runner, the build sandbox sandbox.BuildRunner (copy steps and Debian
// bases need none; mmdebstrap runs on the host). It reaches registries
// anonymously, over HTTPS (plain HTTP only to loopback), does not verify
// signatures, push or export images, and collects garbage only when asked (GC).
package image
