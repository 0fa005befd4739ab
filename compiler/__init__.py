"""kueue-policy: a GitOps compiler from GPU-sharing policy to Kueue and DRA manifests."""

__version__ = "0.1.0"
