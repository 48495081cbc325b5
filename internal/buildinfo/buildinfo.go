// Package buildinfo says which build a binary is: the release stamp set at link time, or else
// what Go recorded of the module and its revision. coworkbridge and coworkbridge-hook answer
// --version with it. It imports nothing of ours, so the small hook stays small; it does not
// stamp anything itself.
package buildinfo

import "runtime/debug"

// Version is stamp when the release set one, else the module version, the VCS revision Go
// recorded (12 digits) and the Go version.
func Version(stamp string) string {
	if stamp != "" {
		return stamp
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v + " " + info.GoVersion
}
