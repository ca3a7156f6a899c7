package task

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
)

type junitCase struct {
	Classname string    `xml:"classname,attr"`
	Name      string    `xml:"name,attr"`
	File      string    `xml:"file,attr"`
	Failure   *struct{} `xml:"failure"`
	Error     *struct{} `xml:"error"`
	Skipped   *struct{} `xml:"skipped"`
}

// parseJUnit reads JUnit XML: a <testsuites> or <testsuite> root holding <testcase>
// elements at any depth. With a nonce, the root must carry it as agentbox-nonce; an
// agentbox-error attribute (the runner saw its machinery replaced) rejects the run.
func parseJUnit(data []byte, nonce string) (Results, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	var r Results
	root := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Results{}, resultsErrorf(JUnit, "malformed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if !root {
			root = true
			if se.Name.Local != "testsuites" && se.Name.Local != "testsuite" {
				return Results{}, resultsErrorf(JUnit, "root element <%s>, want <testsuites> or <testsuite>", se.Name.Local)
			}
			if err := checkJUnitRoot(se, nonce); err != nil {
				return Results{}, err
			}
			continue
		}
		if se.Name.Local != "testcase" {
			continue
		}
		var c junitCase
		if err := dec.DecodeElement(&c, &se); err != nil {
			return Results{}, resultsErrorf(JUnit, "malformed <testcase>: %v", err)
		}
		if c.Name == "" {
			return Results{}, resultsErrorf(JUnit, "<testcase> without a name")
		}
		o := OutcomePass
		switch {
		case c.Error != nil:
			o = OutcomeError
		case c.Failure != nil:
			o = OutcomeFail
		case c.Skipped != nil:
			o = OutcomeSkip
		}
		r.addKeyed(junitID(c), TestKey{Class: c.Classname, Name: c.Name}, o)
	}
	if !root {
		return Results{}, resultsErrorf(JUnit, "no XML element")
	}
	return r, nil
}

func checkJUnitRoot(se xml.StartElement, nonce string) error {
	var got string
	for _, a := range se.Attr {
		switch a.Name.Local {
		case "agentbox-error":
			return resultsErrorf(JUnit, "the runner reports: %s", a.Value)
		case "agentbox-nonce":
			got = a.Value
		}
	}
	if nonce != "" && got != nonce {
		return resultsErrorf(JUnit, "the results file does not carry this run's nonce")
	}
	return nil
}

// junitID builds the canonical id FILE::CLASS::NAME (pytest's node id). The class
// part is classname without the module path that FILE implies; a test without a
// class (classname is just the module) is FILE::NAME. A testcase without a file
// attribute gets CLASSNAME::NAME, which never matches a canonical id.
func junitID(c junitCase) string {
	if c.File == "" {
		return c.Classname + "::" + c.Name
	}
	module := strings.ReplaceAll(strings.TrimSuffix(c.File, ".py"), "/", ".")
	switch {
	case c.Classname == module || c.Classname == "":
		return c.File + "::" + c.Name
	case strings.HasPrefix(c.Classname, module+"."):
		class := strings.ReplaceAll(strings.TrimPrefix(c.Classname, module+"."), ".", "::")
		return c.File + "::" + class + "::" + c.Name
	}
	return c.File + "::" + c.Classname + "::" + c.Name
}
