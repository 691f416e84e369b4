package daemon

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRequestUpgradeWhileUpgrading: an admin UPGRADE while an upgrade runs
// is refused (55000 at the console), as is one while another waits to be
// taken; otherwise it is queued.
func TestRequestUpgradeWhileUpgrading(t *testing.T) {
	d := &Daemon{upgradeReq: make(chan struct{}, 1)}
	require.NoError(t, d.RequestUpgrade())
	require.ErrorIs(t, d.RequestUpgrade(), ErrUpgradeInProgress, "one not yet taken")
	<-d.Upgrades()
	d.upgrading.Store(true)
	require.ErrorIs(t, d.RequestUpgrade(), ErrUpgradeInProgress, "one running")
	d.upgrading.Store(false)
	require.NoError(t, d.RequestUpgrade(), "after an aborted one")
}
