package ftdc_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/qmlsab/qmlsab/ftdc"
)

func Example() {
	tmp, _ := os.MkdirTemp("", "ftdc-example-")
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "diagnostic.data")

	t0 := time.Date(2025, 3, 8, 22, 58, 41, 0, time.UTC)
	w, err := ftdc.NewWriter(dir, ftdc.WriterOptions{
		Metadata: bson.D{{Key: "buildInfo", Value: bson.D{{Key: "version", Value: "8.0.4"}}}},
		Now:      func() time.Time { return t0 },
	})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		at := bson.DateTime(t0.Add(time.Duration(i) * time.Second).UnixMilli())
		w.Add(bson.D{
			{Key: "start", Value: at},
			{Key: "serverStatus", Value: bson.D{
				{Key: "host", Value: "sim-1"},
				{Key: "mem", Value: bson.D{{Key: "resident", Value: int32(500 + i)}}},
				{Key: "opcounters", Value: bson.D{{Key: "query", Value: int64(10 * i)}}},
			}},
			{Key: "end", Value: at},
		})
	}
	w.Close()

	paths, _ := ftdc.ListPaths(dir)
	fmt.Println(paths)
	ftdc.Dump(os.Stdout, []string{"serverStatus.mem.resident", "serverStatus.opcounters.query"}, "csv", dir)
	// Output:
	// [start serverStatus.mem.resident serverStatus.opcounters.query end]
	// start,serverStatus.mem.resident,serverStatus.opcounters.query
	// 1741474721000,500,0
	// 1741474722000,501,10
	// 1741474723000,502,20
}
