package nethost

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// NPMPackage is a package the origin serves as an npm registry would.
type NPMPackage struct {
	Name     string
	Registry string // https://NAME:PORT, the registry's URL without the final slash
	AuthKey  string // the .npmrc key of its token: //NAME:PORT/:_authToken
}

// ServeNPM serves the package pkg, version 1.0.0, whose index.js exports text, over
// the origin's HTTPS port as the registry at https://name:port/. Unless token is
// empty, every request must carry "Authorization: Bearer TOKEN".
func (o *Origin) ServeNPM(name, pkg, text, token string) NPMPackage {
	hostport := name + ":" + strconv.Itoa(int(o.HTTPS.Port()))
	np := NPMPackage{Name: pkg, Registry: "https://" + hostport, AuthKey: "//" + hostport + "/:_authToken"}
	tgz := tarball(map[string]string{
		"package/package.json": `{"name":"` + pkg + `","version":"1.0.0","main":"index.js"}`,
		"package/index.js":     "module.exports = " + strconv.Quote(text) + ";\n",
	})
	sum512, sum1 := sha512.Sum512(tgz), sha1.Sum(tgz)
	packument, _ := json.Marshal(map[string]any{
		"name": pkg, "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": pkg, "version": "1.0.0",
			"dist": map[string]string{
				"tarball":   np.Registry + "/" + pkg + "/-/" + pkg + "-1.0.0.tgz",
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sum512[:]),
				"shasum":    hex.EncodeToString(sum1[:]),
			},
		}},
	})
	authorized := func(w http.ResponseWriter, r *http.Request) bool {
		if token != "" && r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return false
		}
		return true
	}
	o.Mux.HandleFunc("/"+pkg, func(w http.ResponseWriter, r *http.Request) {
		if authorized(w, r) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(packument)
		}
	})
	o.Mux.HandleFunc("/"+pkg+"/-/", func(w http.ResponseWriter, r *http.Request) {
		if authorized(w, r) {
			w.Write(tgz)
		}
	})
	return np
}

// tarball makes a .tgz of files, in a fixed order and time.
func tarball(files map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, name := range []string{"package/package.json", "package/index.js"} {
		body := files[name]
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: time.Unix(1e9, 0)})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}
