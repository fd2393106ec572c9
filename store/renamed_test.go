package store

import (
	"encoding/json"
	"testing"
)

// A v1 key is renamed only at the record's top level, and where a record
// holds both names of one key the v2 one stands: a sample whose values
// name a path "ProcessID" keeps it, and a second giving readTickets and
// read_tickets reads the latter.
func TestRenamedKeysOfAV1Record(t *testing.T) {
	var s Sample
	if err := json.Unmarshal([]byte(`{"member":"m0","process_id":"p2","ProcessID":"p1","Values":{"ProcessID":3}}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.ProcessID != "p2" || s.Values["ProcessID"] != 3 || s.Member != "m0" {
		t.Errorf("sample %+v: want process_id p2 (the v2 key stands) and the value ProcessID kept", s)
	}
	var sec Second
	if err := json.Unmarshal([]byte(`{"t":1,"readTickets":5,"read_tickets":7,"residentMB":9}`), &sec); err != nil {
		t.Fatal(err)
	}
	if sec.ReadTix == nil || *sec.ReadTix != 7 || sec.ResidentMB == nil || *sec.ResidentMB != 9 || sec.T != 1 {
		t.Errorf("second %+v: want read tickets 7 (the v2 key stands), resident 9 (renamed), t 1", sec)
	}
	var k Kill
	if err := json.Unmarshal([]byte(`{"opid":4,"appName":"storm"}`), &k); err != nil {
		t.Fatal(err)
	}
	if k.AppName != "storm" || k.OpID != 4 {
		t.Errorf("kill %+v: want app storm (renamed) and opid 4", k)
	}
}
