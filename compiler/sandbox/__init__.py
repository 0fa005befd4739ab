"""`kueue-policy sandbox`: a real Kueue on this machine, without a cluster.

A sandbox is etcd, kube-apiserver and Kueue's own controller manager, built from Go modules by
`make sandbox` (oracle/sandbox/) and run here on 127.0.0.1 ports, every file it writes inside
one folder. It is what Kueue's own integration tests run (envtest: no kubelet, no nodes), plus
Kueue's webhooks and manager: the API server's validation and defaulting, Kueue's webhooks, its
controllers and its scheduler loop, as a live cluster runs them.

Modules, in the order `up` uses them:
    artifacts    where `make sandbox` put the binaries and Kueue's manifests
    workdir      the sandbox folder: what lives where, its state file
    certs        the certificates and keys the three processes and their clients need
    processes    starting a server in its own process group, and stopping it for sure
    apiclient    a small HTTPS client for readiness checks and condition polling
    kueue_setup  Kueue's CRDs, webhooks and manager Configuration wired to 127.0.0.1
    lifecycle    up, down, status
    cli          the command line
"""
