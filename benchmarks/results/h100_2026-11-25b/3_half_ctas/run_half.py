"""python scratch/run_half.py MODULE_OR_SCRIPT args...: with HALF=F, GEMV phases are tiled for num_ctas / F CTAs."""
import os, runpy, sys
import megagen.decode as D
F = int(os.environ.get("HALF", "1"))
if F > 1:
    orig = D.Tiling.gemv_tiles
    def tiles(self, *a, **k):
        n = self.num_ctas
        object.__setattr__(self, "num_ctas", max(1, n // F))
        try:
            return orig(self, *a, **k)
        finally:
            object.__setattr__(self, "num_ctas", n)
    D.Tiling.gemv_tiles = tiles
target, sys.argv = sys.argv[1], sys.argv[1:]
if target.endswith(".py"):
    runpy.run_path(target, run_name="__main__")
else:
    runpy.run_module(target, run_name="__main__")
