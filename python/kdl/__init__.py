"""kdl: load KDL kernel specs into PyTorch.

    import kdl
    m = kdl.load("samples/kernels/transformer.kdl")   # runs kdlc, builds once, then a cache hit
    y = m.mlp_up_bf16_bias_gelu(x, w, bias)            # torch.ops.kdl_transformer.mlp_up_bf16_bias_gelu

See README.md beside this package (python/README.md in the repository)."""

__version__ = "0.1.0"

from ._errors import BuildError, KdlcNotFound, NamespaceConflict, SpecError
from ._load import KernelModule, cache_dir, clear_cache, load

__all__ = ["load", "cache_dir", "clear_cache", "KernelModule", "SpecError", "BuildError", "KdlcNotFound",
           "NamespaceConflict", "__version__"]
