"""Check the activation-memory model against what PyTorch autograd actually keeps, on the CPU.

The memory model (``helpers.memory``) counts, tensor by tensor, what a transformer layer keeps for
its backward pass. This script runs real Hugging Face models with PyTorch on the CPU (no GPU needed)
and measures four of its claims:

* ``saved per layer``: the bytes autograd saves for one BERT-large layer (eager attention, batch 1,
  512 tokens, no dropout: the CPU's dropout masks take 4 bytes where CUDA's take 1), counted with
  ``torch.autograd.graph.saved_tensors_hooks`` (every storage once, the weights left out), in
  fp32 and under bf16 autocast (without the 16-bit weight casts, which CUDA's autocast caches and
  ``memory.model_states`` counts with the weights), against ``memory.activations_per_layer``;
* ``loss copies``: the peak memory of the loss of a causal LM (one BLOOM block, a 250,880-token
  vocabulary, 8 x 64 tokens, fp32), in fp32 copies of the logits, against
  ``memory.LOSSES["unfused"]``;
* ``recompute transient``: the extra peak of gradient checkpointing (PyTorch's non-reentrant
  checkpoint around each BERT-large layer) beyond the inputs it keeps, in layers, against the one
  layer ``memory.activations`` adds (less that layer's input, which the inputs kept count already). The embeddings are frozen in the BERT runs: the dense gradient
  of a 30,522 x 1,024 embedding table (125 MB) would otherwise be the peak of so short a model.

Peaks are the growth of the process's peak resident memory (Linux VmHWM, reset through
``/proc/self/clear_refs``) with glibc returning large blocks to the system at once
(``MALLOC_MMAP_THRESHOLD_``), so that the peak follows the live tensors.

How: torch and transformers are installed (pinned) into a virtual environment of their own, never
into the book's; the WORKER below runs under its Python and writes JSON on stdout.

    python benchmarks/probe_memory.py [--venv DIR] [--out PATH]

writes benchmarks/probe_memory.csv: quantity, measured, model, unit, note.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from helpers import memory  # noqa: E402
from helpers.models import Model  # noqa: E402

PROBE = ["torch==2.4.1", "transformers==4.44.2"]
BERT_LARGE = Model(name="bert-large", display_name="BERT large", n_params=335_143_938, n_active_params=335_143_938,
                   n_layers=24, d_model=1024, n_heads=16, n_kv_heads=16, d_ff=4096, vocab_size=2, context_len=512)

WORKER = r'''
import gc, json, torch
from transformers import BertConfig, BertForSequenceClassification, BloomConfig, BloomForCausalLM

def status():
    return {k: int(v.split()[0]) * 1024 for k, v in (line.split(":", 1) for line in open("/proc/self/status"))
            if k in ("VmHWM", "VmRSS")}

def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

def bert(layers, checkpointing=False, amp=False):
    torch.manual_seed(0)
    cfg = BertConfig(hidden_size=1024, num_hidden_layers=layers, num_attention_heads=16, intermediate_size=4096,
                     num_labels=2, attn_implementation="eager", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    m = BertForSequenceClassification(cfg).train()
    m.bert.embeddings.requires_grad_(False)  # its dense gradient, vocabulary x h, would be the peak of a short model
    if checkpointing:
        m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    x = {"input_ids": torch.randint(100, 30000, (1, 512)), "labels": torch.randint(0, 2, (1,))}
    m(**x).loss.backward()  # the gradients exist from here on, as in every later step
    gc.collect()
    skip = {p.untyped_storage().data_ptr() for p in m.parameters()}
    skip |= {p.grad.untyped_storage().data_ptr() for p in m.parameters() if p.grad is not None}
    casts = {tuple(l.weight.shape) for l in m.modules() if isinstance(l, torch.nn.Linear)}  # autocast's weight casts
    seen = {}
    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in skip and not (t.dtype == torch.bfloat16 and tuple(t.shape) in casts):
            seen[st.data_ptr()] = st.nbytes()
        return t
    reset_peak()
    base = status()["VmRSS"]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), torch.autocast("cpu", torch.bfloat16, enabled=amp):
        loss = m(**x).loss
    loss.backward()
    return sum(seen.values()), status()["VmHWM"] - base

def logits():
    torch.manual_seed(0)
    b, s, v = 8, 64, 250880
    m = BloomForCausalLM(BloomConfig(vocab_size=v, hidden_size=64, n_layer=1, n_head=4))
    for n, p in m.named_parameters():
        p.requires_grad_(n.startswith("transformer.h.0"))  # a trainable block behind the frozen head, as with LoRA
    x = torch.randint(0, v, (b, s))
    m(input_ids=x, labels=x).loss.backward()
    gc.collect()
    reset_peak()
    base = status()["VmRSS"]
    out = m(input_ids=x, labels=x)
    out.loss.backward()
    return (status()["VmHWM"] - base) / (b * s * v * 4)

out = {"logit copies": logits()}
for name, kw in (("fp32", {}), ("autocast", {"amp": True}), ("checkpointing", {"checkpointing": True})):
    few, many = bert(2, **kw), bert(6, **kw)
    out[name] = {"saved per layer": (many[0] - few[0]) / 4, "peak per layer": (many[1] - few[1]) / 4,
                 "peak beyond the layers": few[1] - 2 * (many[1] - few[1]) / 4}
print(json.dumps(out))
'''


def probe_python(venv: Path) -> Path:
    """The Python of a virtual environment holding torch and transformers (made on first use)."""
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"] + PROBE, check=True)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "probe-memory-venv")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("probe_memory.csv"))
    args = parser.parse_args()
    env = os.environ | {"MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([str(probe_python(args.venv)), "-c", WORKER], capture_output=True, text=True, env=env, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    layer = {amp: memory.activations_per_layer(BERT_LARGE, 1, 512, dtype="bf16" if amp else "fp32", amp=amp,
                                               flash_attention=False) for amp in (False, True)}
    kept_input = memory.activations_per_layer(BERT_LARGE, 1, 512, dtype="fp32", recompute="full", flash_attention=False)
    ckpt, fp32 = got["checkpointing"], got["fp32"]
    rows = [
        ("saved per layer, fp32", fp32["saved per layer"], layer[False], "bytes", "BERT-large layer, batch 1 x 512"),
        ("saved per layer, bf16 autocast", got["autocast"]["saved per layer"], layer[True], "bytes",
         "each of the separate Q, K and V products keeps its own 16-bit copy of the input; the model counts one"),
        ("loss at its peak, Hugging Face causal LM", got["logit copies"], memory.LOSSES["unfused"], "fp32 logit copies",
         "BLOOM head, 250,880-token vocabulary"),
        ("recompute transient", (ckpt["peak beyond the layers"] - fp32["peak beyond the layers"]) / fp32["saved per layer"],
         (layer[False] - kept_input) / layer[False], "layers",
         "peak with gradient checkpointing beyond its kept inputs, less the same without it: one layer less its input"),
    ]
    table = pd.DataFrame(rows, columns=["quantity", "measured", "model", "unit", "note"])
    table.to_csv(args.out, index=False)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
