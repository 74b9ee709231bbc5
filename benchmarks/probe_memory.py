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

writes src/helpers/data/memory_probe.csv (id, quantity, measured, unit, setting, source,
verified_on); ``validation.memory_probe`` sets the model's count beside each measurement.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
PROBE = ["torch==2.4.1", "transformers==4.44.2"]

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
    parser.add_argument("--out", type=Path, default=ROOT / "src" / "helpers" / "data" / "memory_probe.csv")
    args = parser.parse_args()
    env = os.environ | {"MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([str(probe_python(args.venv)), "-c", WORKER], capture_output=True, text=True, env=env, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    ckpt, fp32 = got["checkpointing"], got["fp32"]
    source = f"benchmarks/probe_memory.py: {', '.join(PROBE)}, CPU"
    rows = [
        ("P01", "saved per layer, fp32", fp32["saved per layer"], "bytes", "BERT-large layer, 1 x 512 tokens, no dropout"),
        ("P02", "saved per layer, bf16 autocast", got["autocast"]["saved per layer"], "bytes",
         "the same layer under autocast, without the 16-bit weight casts"),
        ("P03", "loss at its peak, Hugging Face causal LM", got["logit copies"], "fp32 logit copies",
         "one BLOOM block, 250,880-token vocabulary, 8 x 64 tokens"),
        ("P04", "layer rebuilt by gradient checkpointing",
         (ckpt["peak beyond the layers"] - fp32["peak beyond the layers"]) / fp32["saved per layer"], "layers",
         "BERT-large, peak beyond the kept inputs less the same without checkpointing"),
    ]
    table = pd.DataFrame(rows, columns=["id", "quantity", "measured", "unit", "setting"])
    table = table.assign(source=source, verified_on=date.today().isoformat())
    table.to_csv(args.out, index=False, lineterminator="\n")
    print(table.to_string(index=False))

if __name__ == "__main__":
    main()
