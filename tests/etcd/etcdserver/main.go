// Command etcd is the etcd server built from the Go module proxy
// (go.etcd.io/etcd/server/v3), for the etcd suite's second server version.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
