"""Pick the compute device: CUDA, then Apple's MPS, then CPU, unless told otherwise."""

from __future__ import annotations

import gc

import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")


def resolve_device(name: str = "auto") -> torch.device:
    """The device for ``name`` (``auto``, ``cpu``, ``cuda``, ``cuda:1``, ``mps``).

    Raises:
        ValueError: an unknown name, or a device this machine does not have.
    """
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"unknown device {name!r}; expected one of {', '.join(DEVICE_CHOICES)}") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("CUDA was requested but no CUDA GPU is available")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError("MPS was requested but Apple's Metal backend is not available")
    if device.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"unsupported device {name!r}; expected one of {', '.join(DEVICE_CHOICES)}")
    return device


def available_devices() -> list[str]:
    """Device names usable on this machine, CPU first."""
    names = ["cpu"]
    if torch.cuda.is_available():
        names.append("cuda")
    if torch.backends.mps.is_available():
        names.append("mps")
    return names


def gpu_count() -> int:
    """Number of CUDA GPUs this machine has (0 without CUDA)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def gpu_name() -> str | None:
    """The first CUDA GPU's name (``"NVIDIA H200"``), or None on a machine without one."""
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def thread_count() -> int:
    """Intra-op threads torch uses in this thread."""
    return torch.get_num_threads()


def set_threads(n: int) -> None:
    """Use ``n`` (at least 1) intra-op threads in this thread."""
    torch.set_num_threads(max(1, int(n)))


def is_out_of_memory(error: BaseException) -> bool:
    """Whether ``error`` is a device running out of memory (a smaller model or batch may fit)."""
    return isinstance(error, torch.OutOfMemoryError)


def release_memory() -> None:
    """Collect garbage and return the CUDA cache after a failed run, so the next one starts clean."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
