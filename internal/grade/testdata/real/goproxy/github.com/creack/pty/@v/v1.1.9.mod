module github.com/creack/pty

go 1.13

