package harness

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWarmUpPlan: every pooler, never direct PostgreSQL, each client count
// once and the largest first.
func TestWarmUpPlan(t *testing.T) {
	t.Parallel()
	direct := target{name: TargetDirect, db: benchDB}
	bouncer := target{name: TargetPgBouncer, db: benchDB}
	doorman := target{name: TargetDoorman, db: benchDB}
	tests := []struct {
		name    string
		targets []target
		clients []int
		want    []WarmUp
	}{
		{"largest first, direct skipped", []target{direct, bouncer, doorman}, []int{10, 400, 100}, []WarmUp{
			{Target: TargetPgBouncer, DB: benchDB, Clients: 400}, {Target: TargetPgBouncer, DB: benchDB, Clients: 100}, {Target: TargetPgBouncer, DB: benchDB, Clients: 10},
			{Target: TargetDoorman, DB: benchDB, Clients: 400}, {Target: TargetDoorman, DB: benchDB, Clients: 100}, {Target: TargetDoorman, DB: benchDB, Clients: 10},
		}},
		{"a count given twice runs once", []target{doorman}, []int{100, 100}, []WarmUp{{Target: TargetDoorman, DB: benchDB, Clients: 100}}},
		{"only direct: nothing", []target{direct}, []int{10}, nil},
		{"the target's database", []target{{name: TargetDoorman, db: preparedDB}}, []int{100}, []WarmUp{{Target: TargetDoorman, DB: preparedDB, Clients: 100}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, warmUpPlan(tt.targets, tt.clients))
		})
	}
}

// TestRenderWarmUps: sections 1 and 2 say which warm-up runs came before
// their first round, and a report without any (older JSON) says nothing.
func TestRenderWarmUps(t *testing.T) {
	t.Parallel()
	r := testReport()
	require.NotContains(t, Render(r), "Before the first round")
	r.WarmUps = []WarmUp{
		{Target: TargetPgBouncer, DB: benchDB, Clients: 400}, {Target: TargetPgBouncer, DB: benchDB, Clients: 10},
		{Target: TargetDoorman, DB: benchDB, Clients: 400}, {Target: TargetDoorman, DB: benchDB, Clients: 10},
		{Target: TargetPgBouncer, DB: preparedDB, Clients: 100}, {Target: TargetDoorman, DB: preparedDB, Clients: 100},
	}
	md := Render(r)
	require.Contains(t, md, "from the `-l` logs.\n- Before the first round each pooler ran select-only -M simple for 5 s at 400, 10 clients (in that order)")
	require.Contains(t, md, "the exit code of the last round. Before the first round each pooler ran select-only -M simple for 5 s at 100 clients")
}
