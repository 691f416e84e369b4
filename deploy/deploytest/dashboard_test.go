//go:build linux

package deploytest

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

type dashboard struct {
	Inputs []struct {
		Name, Type, PluginID string
	} `json:"__inputs"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string         `json:"name"`
			Definition string         `json:"definition"`
			Datasource map[string]any `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int                      `json:"id"`
	Type       string                   `json:"type"`
	Title      string                   `json:"title"`
	Datasource map[string]any           `json:"datasource"`
	GridPos    struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		RefID      string         `json:"refId"`
		Expr       string         `json:"expr"`
		Datasource map[string]any `json:"datasource"`
	} `json:"targets"`
}

// TestDashboardModel checks what Grafana's import needs and what the
// seed's panel list asks for, without a Grafana: the data source is the
// DS_PROMETHEUS input everywhere, ids and refIds are unique, panels do not
// overlap on the 24-column grid, the template variables come from
// label_values, and every row of the seed's list is there.
func TestDashboardModel(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(dashboardPath(t))
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotEmpty(t, d.UID)
	require.Len(t, d.Inputs, 1)
	require.Equal(t, "DS_PROMETHEUS", d.Inputs[0].Name)
	require.Equal(t, "prometheus", d.Inputs[0].PluginID)
	isInput := func(ds map[string]any) bool { return ds["type"] == "prometheus" && ds["uid"] == "${DS_PROMETHEUS}" }

	vars := map[string]string{}
	for _, v := range d.Templating.List {
		require.True(t, isInput(v.Datasource), "variable %s: data source", v.Name)
		vars[v.Name] = v.Definition
	}
	for _, name := range []string{"database", "user"} {
		require.True(t, strings.HasPrefix(vars[name], "label_values("), "variable %s: %q", name, vars[name])
	}

	ids := map[int]bool{}
	cells := map[[2]int]string{}
	var rows []string
	for _, p := range d.Panels {
		require.False(t, ids[p.ID], "panel id %d twice", p.ID)
		ids[p.ID] = true
		g := p.GridPos
		require.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.X+g.W <= 24, "panel %q: gridPos %+v", p.Title, g)
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				require.Empty(t, cells[[2]int{x, y}], "panel %q overlaps %q", p.Title, cells[[2]int{x, y}])
				cells[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		require.True(t, isInput(p.Datasource), "panel %q: data source", p.Title)
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.RefID, "panel %q", p.Title)
			require.False(t, refs[tg.RefID], "panel %q: refId %s twice", p.Title, tg.RefID)
			refs[tg.RefID] = true
			require.True(t, isInput(tg.Datasource), "panel %q target %s: data source", p.Title, tg.RefID)
			require.NotEmpty(t, tg.Expr, "panel %q target %s", p.Title, tg.RefID)
		}
	}
	all := strings.Join(rows, "\n")
	for _, want := range []string{"Overview", "Pools", "Queries and transactions", "Wait", "Traffic", "Server connections",
		"Pool coordinator", "Pool scaling / burst gate", "Patroni fallback", "auth_query", "Logins", "TLS"} {
		require.Contains(t, all, want, "row missing")
	}
}
