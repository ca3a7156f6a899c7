module github.com/frankban/quicktest

require (
	github.com/google/go-cmp v0.5.9
	github.com/kr/pretty v0.3.1
)

go 1.13
