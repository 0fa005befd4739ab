// Command etcd is etcd's own server command (go.etcd.io/etcd/server/v3/etcdmain), built here
// at the etcd release Kubernetes' go.mod pins, so the sandbox runs the etcd kube-apiserver is
// tested against. Nothing of etcd's logic lives in this file.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
