package image

import (
	"archive/tar"
	"bytes"
	"fmt"
	"strconv"
	"testing"
)

type sparseData struct {
	off  int64
	data string
}

// sparseTar writes an archive with one file in the PAX GNU sparse 1.0 format (what
// GNU tar --sparse writes): archive/tar reads the format but no longer writes it,
// so the headers are built here. realSize is the logical size, which an archive
// may set to anything.
func sparseTar(t testing.TB, name string, realSize int64, frags []sparseData) []byte {
	t.Helper()
	var m bytes.Buffer
	fmt.Fprintf(&m, "%d\n", len(frags))
	var data bytes.Buffer
	for _, f := range frags {
		fmt.Fprintf(&m, "%d\n%d\n", f.off, len(f.data))
	}
	pad(&m)
	for _, f := range frags {
		data.WriteString(f.data)
	}
	body := append(m.Bytes(), data.Bytes()...)
	pax := paxRecords(map[string]string{
		"GNU.sparse.major":    "1",
		"GNU.sparse.minor":    "0",
		"GNU.sparse.name":     name,
		"GNU.sparse.realsize": strconv.FormatInt(realSize, 10),
	})
	var out bytes.Buffer
	out.Write(ustar("PaxHeaders/"+name, 'x', int64(len(pax))))
	out.Write(pax)
	pad(&out)
	out.Write(ustar("GNUSparseFile.0/"+name, tar.TypeReg, int64(len(body))))
	out.Write(body)
	pad(&out)
	out.Write(make([]byte, 1024))
	return out.Bytes()
}

func pad(b *bytes.Buffer) {
	if r := b.Len() % 512; r != 0 {
		b.Write(make([]byte, 512-r))
	}
}

func paxRecords(recs map[string]string) []byte {
	var b bytes.Buffer
	for _, k := range []string{"GNU.sparse.major", "GNU.sparse.minor", "GNU.sparse.name", "GNU.sparse.realsize"} {
		v := recs[k]
		rec := " " + k + "=" + v + "\n"
		n := len(rec) + 1
		for len(strconv.Itoa(n))+len(rec) != n {
			n = len(strconv.Itoa(n)) + len(rec)
		}
		fmt.Fprintf(&b, "%d%s", n, rec)
	}
	return b.Bytes()
}

// ustar is one 512-byte ustar header block.
func ustar(name string, typ byte, size int64) []byte {
	h := make([]byte, 512)
	copy(h[0:100], name)
	copy(h[100:108], "0000644\x00")
	copy(h[108:116], "0000000\x00")
	copy(h[116:124], "0000000\x00")
	copy(h[124:136], fmt.Sprintf("%011o\x00", size))
	copy(h[136:148], fmt.Sprintf("%011o\x00", 1714979289))
	h[156] = typ
	copy(h[257:263], "ustar\x00")
	copy(h[263:265], "00")
	copy(h[148:156], "        ")
	var sum int64
	for _, c := range h {
		sum += int64(c)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return h
}
