package report

import (
	"strings"
	"testing"

	"github.com/qmlsab/qmlsab/templates"
)

// The report names what answered the trials, as their startup checks
// recorded it: one line per distinct server (a set's members are one).
func TestServersFromTrialMetadataInTheHeader(t *testing.T) {
	meta := []byte(`{"members":[
		{"host":"127.0.0.1:1","version":"7.0.42","implementation":"FerretDB 1.24.2","topology":"standalone"}]}`)
	set := []byte(`{"members":[
		{"host":"a:1","version":"8.0.4","implementation":"mongod","topology":"replica set rs0"},
		{"host":"a:2","version":"8.0.4","implementation":"mongod","topology":"replica set rs0"}]}`)
	if got := trialServers(meta); len(got) != 1 || got[0] != "FerretDB 1.24.2 (reports version 7.0.42), standalone" {
		t.Errorf("FerretDB trial: %q", got)
	}
	if got := trialServers(set); len(got) != 1 || got[0] != "mongod 8.0.4, replica set rs0" {
		t.Errorf("mongod set: %q", got)
	}
	// Metadata from before the implementation was recorded names none.
	if got := trialServers([]byte(`{"members":[{"host":"a:1","version":"8.0.4"}]}`)); len(got) != 0 {
		t.Errorf("old metadata: %q", got)
	}
	a := &Analysis{In: &Input{Servers: trialServers(meta)}}
	if txt := string(BenchTxt(a)); !strings.Contains(txt, "server: FerretDB 1.24.2 (reports version 7.0.42), standalone\n") {
		t.Errorf("bench.txt header:\n%s", txt)
	}
}

// The page names the server in its header table.
func TestHTMLHeaderNamesTheServer(t *testing.T) {
	b, err := templates.Render(templates.Report, pageFuncs, page{Servers: []string{"FerretDB 1.24.2 (reports version 7.0.42), standalone"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `<td id="server">FerretDB 1.24.2 (reports version 7.0.42), standalone</td>`) {
		t.Error("the page's header table does not name the server")
	}
}
