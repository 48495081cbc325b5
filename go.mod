module github.com/coworkbridge/coworkbridge

go 1.26

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/google/renameio/v2 v2.0.2
)

require golang.org/x/sys v0.47.0 // indirect
