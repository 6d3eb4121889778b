"""Compile the sampling tests' graphs for sm_90a with Triton's compiler (no GPU): catches errors the interpreter
does not (call 3: 'operand #0 does not dominate this use')."""
import os, sys
os.environ["TRITON_INTERPRET"] = "0"
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks")); sys.path.insert(0, os.path.join(os.getcwd(), "tests"))
import torch
import megagen.backend
megagen.backend.default_device = lambda: torch.device("cpu")  # tensors on the CPU: compiled, not run
import test_sampling as T
from ptxas_report import megakernel_ptx, registers_by_function
cases = [dict(logits=T.LOGITS.expand(8192, T.VOCAB), top_k=5, rows=1024, lanes=1024),
         dict(logits=T._random_logits("plain"), top_k=5, block=64, rows=4),
         dict(logits=T._random_logits("plain"), top_k=5, block=8, rows=4, entries=2, pool=16),
         dict(logits=T._random_logits("plain").to(torch.bfloat16), top_k=5, block=64, rows=4)]
for case in cases:
    g, _, _ = T.sampling_graph(**case)
    ptx = megakernel_ptx(g, 4)
    print("compiled", {k: v for k, v in case.items() if k != "logits"}, registers_by_function(ptx)[-1], flush=True)
