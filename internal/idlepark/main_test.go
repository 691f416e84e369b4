package idlepark

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestWakeReasonString(t *testing.T) {
	t.Parallel()
	for r, want := range map[WakeReason]string{
		WakeReadable: "readable", WakeHangup: "hangup", WakeError: "error",
		WakeUnparked: "unparked", WakeClosed: "closed", 0: "WakeReason(0)",
	} {
		if got := r.String(); got != want {
			t.Errorf("WakeReason(%d).String() = %q, want %q", uint8(r), got, want)
		}
	}
}
