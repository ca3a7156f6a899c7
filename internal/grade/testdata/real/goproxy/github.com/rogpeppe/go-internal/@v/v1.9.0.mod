module github.com/rogpeppe/go-internal

go 1.17

require github.com/pkg/diff v0.0.0-20210226163009-20ebb0f2a09e
