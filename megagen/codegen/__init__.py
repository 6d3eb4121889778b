"""Code generation: Jinja templates -> one persistent MegaKernel module (and standalone per-op kernels)."""
from megagen.codegen.render import (Variant, load_module, render_megakernel, render_standalone, stage_bytes,
                                   variants_of)

__all__ = ["Variant", "load_module", "render_megakernel", "render_standalone", "stage_bytes", "variants_of"]
