"""python scratch/run_patched.py MODULE_OR_SCRIPT args...: with MLP_BLOCKS="BLOCK_K,BLOCK_H" overriding Tiling.mlp_tiles."""
import os, runpy, sys
import megagen.decode as D
if os.environ.get("MLP_SHAPE"):  # I,BLOCK_K,BLOCK_H
    i, bk, bh = map(int, os.environ["MLP_SHAPE"].split(","))
    D.Tiling.mlp_tiles = lambda self, *a: {"I": i, "BLOCK_K": bk, "BLOCK_H": bh}
target, sys.argv = sys.argv[1], sys.argv[1:]
if target.endswith(".py"):
    runpy.run_path(target, run_name="__main__")
else:
    runpy.run_module(target, run_name="__main__")
