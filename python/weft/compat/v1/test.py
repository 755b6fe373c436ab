"""tf.test: what programs ask of the build (is_built_with_cuda, gpu_device_name)."""
from weft import _weft


def is_built_with_cuda():
    """True when weft's CUDA backend plugin loaded (with or without a GPU to run on)."""
    return any("CUDA" in t.split(",") for t in _weft.plugin_device_types())


def is_gpu_available(cuda_only=False, min_cuda_compute_capability=None):
    return any(d["gpu_like"] and not d["emulated"] and
               (not cuda_only or d["device_type"] == "CUDA") for d in _weft.devices())


def gpu_device_name():
    for d in _weft.devices():
        if d["gpu_like"] and not d["emulated"]:
            return "/device:GPU:%d" % d["ordinal"]
    return ""
