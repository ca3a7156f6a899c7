module github.com/kr/pretty

go 1.12

require (
	github.com/kr/text v0.2.0
	github.com/rogpeppe/go-internal v1.9.0
)
