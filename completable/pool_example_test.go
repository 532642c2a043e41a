package completable_test

import (
	"context"
	"fmt"

	bulkhead "github.com/rxbulkhead/bulkhead"
	"github.com/rxbulkhead/bulkhead/completable"
	"github.com/rxbulkhead/bulkhead/pool"
)

func ExampleFromPool() {
	sftp, _ := pool.New("sftp", pool.Config{MaxWorkers: 2, QueueCapacity: 8, MaxQueueWait: bulkhead.NoTimeout})
	defer sftp.Close(context.Background())

	// upload blocks in a file transfer library: it runs on the pool's workers.
	upload := func(context.Context) error { fmt.Println("uploading invoice.edi"); return nil }
	err := completable.Await(context.Background(), completable.FromPool(sftp, upload))
	fmt.Println("uploaded:", err)
	// Output:
	// uploading invoice.edi
	// uploaded: <nil>
}
