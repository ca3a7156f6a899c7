package image

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Kinds of image source.
const (
	// SourceDockerArchive: a `docker save` archive holding one image.
	SourceDockerArchive = "docker-archive"
	// SourceOCIArchive: an OCI image layout in a tar archive.
	SourceOCIArchive = "oci-archive"
	// SourceOCI: an OCI image layout directory; "oci:DIR:REF" picks the image
	// annotated org.opencontainers.image.ref.name=REF.
	SourceOCI = "oci"
	// SourceRegistry: an image reference in an OCI registry (HTTPS; plain HTTP
	// only to loopback).
	SourceRegistry = "registry"
	// SourceDebian: a Debian suite bootstrapped with mmdebstrap.
	SourceDebian = "debian"
)

// Source names where an image comes from: "KIND:ARG".
type Source struct {
	Kind, Arg string
}

func (s Source) String() string { return s.Kind + ":" + s.Arg }

// ParseSource parses "docker-archive:FILE", "oci-archive:FILE", "oci:DIR[:REF]",
// "registry:REF" or "debian:SUITE".
func ParseSource(s string) (Source, error) {
	kind, arg, _ := strings.Cut(s, ":")
	switch kind {
	case SourceDockerArchive, SourceOCIArchive, SourceOCI, SourceRegistry, SourceDebian:
		if arg == "" {
			return Source{}, fmt.Errorf("image source %q: nothing after %q", s, kind+":")
		}
		return Source{Kind: kind, Arg: arg}, nil
	}
	return Source{}, fmt.Errorf("image source %q: want docker-archive:FILE, oci-archive:FILE, oci:DIR, registry:REF or debian:SUITE", s)
}

// isSource reports whether s names a source rather than an image in the store.
func isSource(s string) bool {
	_, err := ParseSource(s)
	return err == nil
}

// openImage opens the image of an archive, layout or registry source. It returns
// how to name it in the image's record (pinned to a digest where there is one)
// and a cleanup for temporary files, always non-nil.
func openImage(ctx context.Context, src Source, tmp string, lim Limits) (v1.Image, string, func(), error) {
	nothing := func() {}
	switch src.Kind {
	case SourceDockerArchive:
		img, err := tarball.ImageFromPath(src.Arg, nil)
		if err != nil {
			return nil, "", nothing, fmt.Errorf("%s: %w", src, err)
		}
		return img, src.String(), nothing, nil
	case SourceOCIArchive:
		dir, err := os.MkdirTemp(tmp, "oci-archive-")
		if err != nil {
			return nil, "", nothing, err
		}
		cleanup := func() { os.RemoveAll(dir) }
		if err := extractOCIArchive(ctx, src.Arg, dir, lim); err != nil {
			cleanup()
			return nil, "", nothing, fmt.Errorf("%s: %w", src, err)
		}
		img, digest, err := fromLayout(dir, "")
		if err != nil {
			cleanup()
			return nil, "", nothing, fmt.Errorf("%s: %w", src, err)
		}
		return img, src.String() + "@" + digest, cleanup, nil
	case SourceOCI:
		dir, ref := src.Arg, ""
		if _, err := os.Stat(dir); err != nil {
			if i := strings.LastIndexByte(dir, ':'); i > 0 {
				dir, ref = dir[:i], dir[i+1:]
			}
		}
		img, digest, err := fromLayout(dir, ref)
		if err != nil {
			return nil, "", nothing, fmt.Errorf("%s: %w", src, err)
		}
		return img, SourceOCI + ":" + dir + "@" + digest, nothing, nil
	case SourceRegistry:
		img, pinned, err := fromRegistry(ctx, src.Arg)
		if err != nil {
			return nil, "", nothing, fmt.Errorf("%s: %w", src, err)
		}
		return img, SourceRegistry + ":" + pinned, nothing, nil
	}
	return nil, "", nothing, fmt.Errorf("%s: not an image archive, layout or registry", src)
}

// platformOK reports whether p is this host's platform (or unspecified).
func platformOK(os, arch string) bool {
	return (os == "" || os == "linux") && (arch == "" || arch == runtime.GOARCH)
}

// fromLayout picks the image of an OCI layout: the one with ref name ref, or the
// only one for this platform (descending into nested indexes).
func fromLayout(dir, ref string) (v1.Image, string, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, "", err
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, "", err
	}
	imgs, refs, err := layoutImages(idx, ref)
	if err != nil {
		return nil, "", err
	}
	switch {
	case len(imgs) == 0 && ref != "":
		return nil, "", fmt.Errorf("no image named %q for linux/%s in the layout (names: %s)", ref, runtime.GOARCH, strings.Join(refs, ", "))
	case len(imgs) == 0:
		return nil, "", fmt.Errorf("no image for linux/%s in the layout", runtime.GOARCH)
	case len(imgs) > 1:
		return nil, "", fmt.Errorf("the layout holds %d images for linux/%s: pick one with oci:DIR:REF (names: %s)", len(imgs), runtime.GOARCH, strings.Join(refs, ", "))
	}
	d, err := imgs[0].Digest()
	if err != nil {
		return nil, "", err
	}
	return imgs[0], d.String(), nil
}

const refNameAnnotation = "org.opencontainers.image.ref.name"

func layoutImages(idx v1.ImageIndex, ref string) (imgs []v1.Image, refs []string, err error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	for _, d := range im.Manifests {
		if n := d.Annotations[refNameAnnotation]; n != "" {
			refs = append(refs, n)
		}
		if ref != "" && d.Annotations[refNameAnnotation] != ref {
			continue
		}
		switch {
		case d.MediaType.IsImage():
			if d.Platform == nil || platformOK(d.Platform.OS, d.Platform.Architecture) {
				img, err := idx.Image(d.Digest)
				if err != nil {
					return nil, nil, err
				}
				imgs = append(imgs, img)
			}
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, nil, err
			}
			more, _, err := layoutImages(child, "")
			if err != nil {
				return nil, nil, err
			}
			imgs = append(imgs, more...)
		}
	}
	return imgs, refs, nil
}

// fromRegistry opens ref in its registry, anonymously, for this platform. It
// returns the reference pinned to the manifest's digest.
func fromRegistry(ctx context.Context, ref string) (v1.Image, string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, "", err
	}
	img, err := remote.Image(r,
		remote.WithContext(ctx),
		remote.WithAuth(authn.Anonymous),
		remote.WithPlatform(v1.Platform{OS: "linux", Architecture: runtime.GOARCH}),
		remote.WithTransport(loopbackOnlyHTTP{remote.DefaultTransport}))
	if err != nil {
		return nil, "", err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, "", err
	}
	return img, r.Context().Name() + "@" + d.String(), nil
}

// loopbackOnlyHTTP refuses plain HTTP to anything but this machine's loopback.
// go-containerregistry falls back to HTTP for localhost, and also for private
// (RFC 1918) addresses, and a registry may redirect blob downloads anywhere;
// every request passes here, redirects included.
type loopbackOnlyHTTP struct{ base http.RoundTripper }

func (t loopbackOnlyHTTP) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" && !isLoopback(r.URL.Hostname()) {
		return nil, fmt.Errorf("plain HTTP to %s refused: only a registry on this machine's loopback may be reached without TLS", r.URL.Host)
	}
	return t.base.RoundTrip(r)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
