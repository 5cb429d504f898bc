"""Everything kdl asks of PyTorch, in three small functions that tests replace (kdl itself imports
torch only when a spec is loaded)."""


def import_torch():
    try:
        import torch
    except ImportError as e:
        raise ImportError(f"kdl.load needs PyTorch (import torch failed: {e}); install it, e.g. pip install torch") from e
    return torch


def load_library(path):
    """Loads a built extension: its TORCH_LIBRARY registers the ops."""
    import_torch().ops.load_library(path)


def op(namespace, name):
    """torch.ops.<namespace>.<name>; AttributeError/RuntimeError when the library registered no such op."""
    return getattr(getattr(import_torch().ops, namespace), name)
