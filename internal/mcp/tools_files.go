package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentbox/agentbox/client"
	"github.com/agentbox/agentbox/internal/env"
	"github.com/agentbox/agentbox/internal/workspace"
)

// pathIn names a workspace path.
type pathIn struct {
	ID   string `json:"id" jsonschema:"environment id"`
	Path string `json:"path" jsonschema:"path relative to the workspace root"`
}

type readIn struct {
	pathIn
	Offset int64 `json:"offset,omitempty" jsonschema:"first byte to read"`
	Length int64 `json:"length,omitempty" jsonschema:"bytes to read (0: to the end, within the server's cap)"`
}

type readOut struct {
	Content string `json:"content" jsonschema:"the bytes read; base64 if encoding is base64"`
	Enc     string `json:"encoding" jsonschema:"utf-8 or base64"`
	Bytes   int    `json:"bytes"`
}

type writeIn struct {
	pathIn
	Content string `json:"content" jsonschema:"the whole new content of the file"`
	Enc     string `json:"encoding,omitempty" jsonschema:"utf-8 (default) or base64"`
}

type writeOut struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}

type listDirIn struct {
	ID   string `json:"id" jsonschema:"environment id"`
	Path string `json:"path,omitempty" jsonschema:"directory relative to the workspace root (default: the root)"`
}

type listDirOut struct {
	Entries []client.FileEntry `json:"entries"`
}

type tarOut struct {
	TarBase64 string `json:"tar_base64"`
	Bytes     int    `json:"bytes"`
}

type uploadIn struct {
	listDirIn
	TarBase64 string `json:"tar_base64" jsonschema:"a tar archive, base64-encoded, unpacked into path"`
}

// maxTarBytes bounds a tar carried inside one tool call.
const maxTarBytes = 8 << 20

func (t *tools) addFiles(s *mcp.Server) {
	svc := t.d.Service
	pathWhat := func(in pathIn) string { return envWhat(in.ID) }
	add(t, s, &mcp.Tool{Name: "file_read", Description: "Read a workspace file, or a range of it. A file over the server's cap is an EFBIG error: read it in ranges with offset and length.",
		Annotations: hints("Read file", true, false, true)},
		func(in readIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in readIn) (readOut, error) {
			b, err := svc.ReadFile(ctx, in.ID, in.Path, in.Offset, in.Length)
			if err != nil {
				return readOut{}, err
			}
			return encode(b), nil
		})
	add(t, s, &mcp.Tool{Name: "file_write", Description: "Create or replace a workspace file atomically with the given content.",
		Annotations: hints("Write file", false, true, true)},
		func(in writeIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in writeIn) (writeOut, error) {
			data, err := decodeContent(in.Content, in.Enc)
			if err != nil {
				return writeOut{}, err
			}
			err = svc.WriteFile(ctx, in.ID, in.Path, data)
			return writeOut{Path: in.Path, Bytes: len(data)}, err
		})
	add(t, s, &mcp.Tool{Name: "file_list", Description: "List a workspace directory; entries are described, never followed.",
		Annotations: hints("List directory", true, false, true)},
		func(in listDirIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in listDirIn) (listDirOut, error) {
			ents, err := svc.ListDir(ctx, in.ID, dirOrRoot(in.Path))
			if ents == nil {
				ents = []client.FileEntry{}
			}
			return listDirOut{Entries: ents}, err
		})
	add(t, s, &mcp.Tool{Name: "file_stat", Description: "Describe a workspace entry without following it (a symlink is described with its target).",
		Annotations: hints("Stat file", true, false, true)},
		pathWhat,
		func(ctx context.Context, in pathIn) (client.FileEntry, error) {
			return svc.Stat(ctx, in.ID, in.Path)
		})
	add(t, s, &mcp.Tool{Name: "file_remove", Description: "Remove a workspace file, symlink or directory tree.",
		Annotations: hints("Remove file", false, true, true)},
		pathWhat,
		func(ctx context.Context, in pathIn) (okOut, error) {
			err := svc.Remove(ctx, in.ID, in.Path)
			return okOut{OK: err == nil}, err
		})
	add(t, s, &mcp.Tool{Name: "file_mkdir", Description: "Create a workspace directory and its missing parents.",
		Annotations: hints("Make directory", false, false, true)},
		pathWhat,
		func(ctx context.Context, in pathIn) (okOut, error) {
			err := svc.Mkdir(ctx, in.ID, in.Path)
			return okOut{OK: err == nil}, err
		})
	add(t, s, &mcp.Tool{Name: "files_download", Description: fmt.Sprintf("Pack a workspace file or directory as a tar archive, base64-encoded (at most %d MiB).", maxTarBytes>>20),
		Annotations: hints("Download files", true, false, true)},
		func(in listDirIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in listDirIn) (tarOut, error) {
			var buf bytes.Buffer
			if err := svc.Download(ctx, in.ID, dirOrRoot(in.Path), &capped{w: &buf, n: maxTarBytes}); err != nil {
				return tarOut{}, err
			}
			return tarOut{TarBase64: base64.StdEncoding.EncodeToString(buf.Bytes()), Bytes: buf.Len()}, nil
		})
	add(t, s, &mcp.Tool{Name: "files_upload", Description: "Unpack a base64-encoded tar archive into a workspace directory, replacing files it names.",
		Annotations: hints("Upload files", false, true, true)},
		func(in uploadIn) string { return envWhat(in.ID) },
		func(ctx context.Context, in uploadIn) (okOut, error) {
			b, err := decodeContent(in.TarBase64, "base64")
			if err != nil {
				return okOut{}, err
			}
			err = svc.Upload(ctx, in.ID, dirOrRoot(in.Path), bytes.NewReader(b))
			return okOut{OK: err == nil}, err
		})
}

func encode(b []byte) readOut {
	if utf8.Valid(b) {
		return readOut{Content: string(b), Enc: "utf-8", Bytes: len(b)}
	}
	return readOut{Content: base64.StdEncoding.EncodeToString(b), Enc: "base64", Bytes: len(b)}
}

func dirOrRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func decodeContent(s, enc string) ([]byte, error) {
	switch enc {
	case "", "utf-8":
		return []byte(s), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%w: content is not valid base64: %v", env.ErrInvalid, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: encoding %q: use utf-8 or base64", env.ErrInvalid, enc)
}

// capped fails a write past n bytes with a LimitError.
type capped struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (c *capped) Write(b []byte) (int, error) {
	if len(b) > c.n {
		return 0, &workspace.LimitError{What: "tar archive over MCP", Limit: maxTarBytes}
	}
	c.n -= len(b)
	return c.w.Write(b)
}
