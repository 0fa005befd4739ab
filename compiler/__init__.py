"""kueue-policy: a GitOps compiler from GPU-sharing policy to Kueue and DRA manifests."""

from compiler import speedups

__version__ = "0.1.0"

# The engine's hot modules run from their compiled copies when those were built from the
# sources as they are now (compiler/speedups): installed before any of them is imported.
speedups.install()
