module github.com/coworkbridge/coworkbridge

go 1.26.0

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/gofrs/flock v0.13.1
	github.com/google/jsonschema-go v0.4.3
	github.com/google/renameio/v2 v2.0.2
	github.com/lmittmann/tint v1.2.1
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	golang.org/x/sys v0.47.0
	howett.net/plist v1.0.1
	mvdan.cc/sh/v3 v3.14.1
)

require golang.org/x/text v0.14.0 // indirect
