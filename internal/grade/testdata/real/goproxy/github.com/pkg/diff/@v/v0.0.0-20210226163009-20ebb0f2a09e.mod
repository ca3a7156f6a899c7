module github.com/pkg/diff

go 1.15
