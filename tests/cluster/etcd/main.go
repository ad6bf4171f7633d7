// etcd for the cluster tests, from go.etcd.io/etcd/server/v3 at the release
// go.mod pins: the same entry point as etcd's own binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
