package claudehook

import "testing"

func TestVersionBeforeOrdersReleasesNumerically(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"2.1.220", "2.1.329", true},
		{"2.1.329", "2.1.329", false},
		{"2.1.1000", "2.1.329", false},
		{"2.0.999", "2.1.0", true},
		{"1.9.9", "2.0.0", true},
		{"2.1.328-beta", "2.1.329", true},
		{"2.1.400+build.7", "2.1.329", false},
		{"garbage", "2.1.329", false},
		{"2.1", "2.1.329", false},
		{"02.1.1", "2.1.329", false},
		{"2.1.-1", "2.1.329", false},
		{"2.1.+3", "2.1.329", false},
	}
	for _, tt := range tests {
		if got := VersionBefore(tt.a, tt.b); got != tt.want {
			t.Errorf("VersionBefore(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestHonoursOnFailureFromTheVerifiedRelease(t *testing.T) {
	for v, want := range map[string]bool{"2.1.329": true, "2.2.0": true, "2.1.328": false, "2.1.220": false} {
		if got := HonoursOnFailure(v); got != want {
			t.Errorf("HonoursOnFailure(%q) = %v, want %v", v, got, want)
		}
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"2.1.329", "2.1.329-beta", "", "1..2", "99999999999999999999.1.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := ParseVersion(s)
		if ok && (v[0] < 0 || v[1] < 0 || v[2] < 0 || len(s) > maxVersionLen) {
			t.Errorf("ParseVersion(%q) = %v", s, v)
		}
	})
}
