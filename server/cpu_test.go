package server

import (
	"regexp"
	"strings"
	"testing"
)

// INFO cpu has both fields as seconds with six decimals on every platform:
// from getrusage(2) on Unix systems (where the test process has used some
// CPU time by now), 0 elsewhere.
func TestInfoCPU(t *testing.T) {
	var b strings.Builder
	infoCPU(nil, &b, 0)
	re := regexp.MustCompile(`^used_cpu_sys:(\d+\.\d{6})\r\nused_cpu_user:(\d+\.\d{6})\r\n$`)
	m := re.FindStringSubmatch(b.String())
	if m == nil {
		t.Fatalf("INFO cpu = %q", b.String())
	}
	_, user, err := cpuTimes()
	if err != nil {
		t.Fatal(err)
	}
	if cpuTimesSupported && user <= 0 {
		t.Fatalf("user CPU time %v, want > 0 (INFO cpu %q)", user, b.String())
	}
	if !cpuTimesSupported && m[2] != "0.000000" {
		t.Fatalf("used_cpu_user %s where cpuTimes has no source", m[2])
	}
}
