module github.com/iwkit/iwkit

go 1.25.0
